import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for tests that run the binary, ffmpeg, curl or tmux.
///
/// Foundation's `Process.run()` on Linux lists `/proc/self/fd` by copying each directory entry's whole 256-byte
/// name field, which reads past glibc's buffer when an entry sits at its end: the test process crashes now and
/// then (SIGSEGV in memcpy), more often the more children run at once. This spawns directly: pipes are opened
/// close-on-exec and every other descriptor is closed in the child (`closefrom`).
public final class ChildProcess: Sendable {
    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// Discarded (`/dev/null`).
        case null
        /// A pipe this process reads through `stdout` or `stderr`.
        case pipe
        /// Written to the file at the path (created or truncated).
        case file(String)
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable {
        /// It returned or called exit with the code.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
    }

    /// The child's process ID.
    public let processIdentifier: pid_t
    /// The read end of the child's standard output, when it is `.pipe`.
    public let stdout: FileHandle?
    /// The read end of the child's standard error, when it is `.pipe`.
    public let stderr: FileHandle?
    private let ended = NIOLockedValueBox<Termination?>(nil)

    /// Starts `executable` (a path) with `arguments`, standard input from `/dev/null`, and `environment` (this
    /// process's own when nil).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        stdout: Output = .null, stderr: Output = .null
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        func route(_ output: Output, to target: Int32) throws -> FileHandle? {
            switch output {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
                return nil
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                return nil
            case .pipe:
                var fds: [Int32] = [-1, -1]
                guard pipe(&fds) == 0 else {
                    throw ChildProcessError("cannot make a pipe: \(String(cString: strerror(errno)))")
                }
                _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
                _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
                parentEnds.append(fds[0])
                childEnds.append(fds[1])
                posix_spawn_file_actions_adddup2(&actions, fds[1], target)
                return FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
            }
        }
        let out: FileHandle?
        let err: FileHandle?
        do {
            out = try route(stdout, to: 1)
            err = try route(stderr, to: 2)
        } catch {
            for fd in parentEnds { close(fd) }
            throw error
        }
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw ChildProcessError("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        processIdentifier = pid
        self.stdout = out
        self.stderr = err
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which the Glibc module leaves out.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np").map {
            unsafeBitCast($0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }

    /// Whether the child has not ended yet (reaps it when it has).
    public var isRunning: Bool {
        if ended.withLockedValue({ $0 }) != nil { return false }
        var status: Int32 = 0
        let reaped = waitpid(processIdentifier, &status, WNOHANG)
        if reaped == processIdentifier {
            record(status)
            return false
        }
        // 0: still running; -1: interrupted, or another thread reaped it and is about to record how it ended.
        return reaped == 0 || ended.withLockedValue({ $0 }) == nil
    }

    /// Blocks until the child ends and returns how.
    @discardableResult
    public func waitUntilExit() -> Termination {
        while true {
            if let termination = ended.withLockedValue({ $0 }) { return termination }
            var status: Int32 = 0
            let reaped = waitpid(processIdentifier, &status, 0)
            if reaped == processIdentifier {
                return record(status)
            }
            if reaped == -1 && errno != EINTR {
                // Another thread reaped it; its record is a moment away.
                sched_yield()
            }
        }
    }

    /// Sends `signal` to the child.
    public func send(_ signal: Int32) {
        kill(processIdentifier, signal)
    }

    /// The exit code, or 128 plus the signal's number as a shell reports it; nil while running.
    public var terminationStatus: Int32? {
        switch ended.withLockedValue({ $0 }) {
        case .exited(let code): code
        case .signalled(let signal): 128 + signal
        case nil: nil
        }
    }

    @discardableResult
    private func record(_ status: Int32) -> Termination {
        let termination: Termination =
            (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
        ended.withLockedValue { $0 = termination }
        return termination
    }
}

/// A child process that could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// What went wrong, as a sentence.
    public let description: String
    /// Makes the error from its sentence.
    public init(_ description: String) { self.description = description }
}
