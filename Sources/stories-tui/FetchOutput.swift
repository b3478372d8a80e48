import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where `fetch` writes: stdout, a device or FIFO written in place, or a regular file written under a temporary
/// name and renamed over the target only once every byte is there (so a device is never replaced by a file).
final class FetchOutput {
    private let descriptor: Int32
    private let temporary: String?
    private let target: String?
    private var finished = false

    /// Opens the destination: nil or "-" for stdout. Stale `NAME.partial-PID` files of processes that are gone
    /// are removed first.
    init(path: String?) throws {
        guard let path, path != "-" else {
            descriptor = STDOUT_FILENO
            temporary = nil
            target = nil
            return
        }
        var info = stat()
        if stat(path, &info) == 0 {
            let type = info.st_mode & S_IFMT
            if type == S_IFDIR {
                throw CLIFailure(message: "--output: \(path) is a directory (give a file name)", exitCode: 2)
            }
            if type != S_IFREG {
                // A device, FIFO or socket: write into it as it is.
                let fd = open(path, O_WRONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    throw CLIFailure(message: "--output: cannot open \(path): \(Self.errnoText())", exitCode: 2)
                }
                descriptor = fd
                temporary = nil
                target = nil
                return
            }
        }
        Self.removeStalePartials(of: path)
        let partial = path + ".partial-\(getpid())"
        let fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw CLIFailure(message: "--output: cannot write \(path): \(Self.errnoText())", exitCode: 2)
        }
        descriptor = fd
        temporary = partial
        target = path
    }

    deinit {
        if !finished { abandon() }
    }

    /// Writes all of `bytes`; throws `StandardStreams.Closed` when a pipe's reader has gone.
    func write(_ bytes: [UInt8]) throws {
        try StandardStreams.write(bytes, to: descriptor)
    }

    /// Every byte is written: a temporary file replaces the target atomically.
    func commit() throws {
        finished = true
        guard let temporary, let target else {
            if descriptor != STDOUT_FILENO { close(descriptor) }
            return
        }
        close(descriptor)
        guard rename(temporary, target) == 0 else {
            let reason = Self.errnoText()
            unlink(temporary)
            throw CLIFailure(message: "--output: cannot replace \(target): \(reason)", exitCode: 1)
        }
    }

    /// True when what was written can still be taken back (a regular file under its temporary name), so a
    /// transfer can start over; false for stdout, devices and FIFOs, where the bytes already left.
    var canStartOver: Bool { temporary != nil && !finished }

    /// Empties the temporary file to write it again from its first byte.
    func startOver() throws {
        guard canStartOver else { return }
        guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw CLIFailure(message: "--output: cannot rewrite \(target ?? ""): \(Self.errnoText())", exitCode: 1)
        }
    }

    /// The fetch failed: a temporary file is removed and the target left as it was.
    func abandon() {
        guard !finished else { return }
        finished = true
        if descriptor != STDOUT_FILENO { close(descriptor) }
        if let temporary { unlink(temporary) }
    }

    /// Removes `PATH.partial-PID` files whose process no longer exists (left by a killed fetch).
    static func removeStalePartials(of path: String) {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let prefix = url.lastPathComponent + ".partial-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count)), pid > 0 else { continue }
            if kill(pid, 0) != 0, errno == ESRCH {
                unlink((folder as NSString).appendingPathComponent(name))
            }
        }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
