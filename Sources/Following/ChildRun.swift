import Foundation

/// A child process run to its end with a time limit, its output read as it comes.
enum ChildRun {
    struct Outcome: Sendable {
        var status: Int32
        var output: Data
        var errorText: String
        var timedOut: Bool
    }

    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval, outputLimit: Int) async -> Outcome {
        await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
            DispatchQueue.global(qos: .userInitiated).async {
                done.resume(returning: runBlocking(executable, arguments, timeout: timeout, outputLimit: outputLimit))
            }
        }
    }

    /// Runs the child in a process group of its own, reading its output and error text as they come (neither
    /// pipe fills and stops it) until it exits or the time is up: then the whole group is killed, so its own
    /// children holding the pipes open never keep the caller waiting.
    private static func runBlocking(_ executable: String, _ arguments: [String], timeout: TimeInterval, outputLimit: Int) -> Outcome {
        var outputPipe: [Int32] = [0, 0]
        var errorPipe: [Int32] = [0, 0]
        guard pipe(&outputPipe) == 0 else { return Outcome(status: -1, output: Data(), errorText: "no pipe", timedOut: false) }
        guard pipe(&errorPipe) == 0 else {
            close(outputPipe[0])
            close(outputPipe[1])
            return Outcome(status: -1, output: Data(), errorText: "no pipe", timedOut: false)
        }
        // Closed on exec: another program started meanwhile must not hold the pipes open (the child gets its ends
        // as stdout and stderr, which dup2 keeps open).
        for fd in outputPipe + errorPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // A program just written (a fresh install) can be busy for a moment while another process forked in the
        // meantime still holds it open for writing.
        var spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        for _ in 0..<20 where spawned == ETXTBSY {
            usleep(25_000)
            spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        close(outputPipe[1])
        close(errorPipe[1])
        defer {
            close(outputPipe[0])
            close(errorPipe[0])
        }
        guard spawned == 0 else {
            return Outcome(
                status: -1, output: Data(), errorText: "\(executable) could not be started (\(String(cString: strerror(spawned))))",
                timedOut: false)
        }
        let deadline = Date().addingTimeInterval(timeout)
        var data = Data()
        var errorData = Data()
        var open = [outputPipe[0], errorPipe[0]]
        var timedOut = false
        var status: Int32?
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while status == nil || !open.isEmpty {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 {
                timedOut = status == nil
                break
            }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(left, 0.05) * 1000) + 1)
            if ready < 0, errno != EINTR { break }
            for entry in fds where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count <= 0 {
                    open.removeAll { $0 == entry.fd }
                } else if entry.fd == outputPipe[0] {
                    if data.count < outputLimit { data.append(contentsOf: buffer[0..<min(count, outputLimit - data.count)]) }
                } else if errorData.count < 65_536 {
                    errorData.append(contentsOf: buffer[0..<count])
                }
            }
            if status == nil {
                var raw: Int32 = 0
                if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
            } else if ready == 0 {
                // Exited, and nothing more came: whatever still holds the pipes is not its answer.
                break
            }
        }
        // The group: the child and anything it started.
        kill(-pid, SIGKILL)
        if status == nil {
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0, errno == EINTR {}
            status = raw
        }
        let raw = status ?? 0
        let exitStatus: Int32 = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        return Outcome(
            status: exitStatus, output: data, errorText: String(decoding: errorData, as: UTF8.self), timedOut: timedOut)
    }
}
