import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes to stdout and stderr with plain `write(2)`: a reader that went away (`| head -1`) ends the command
/// quietly instead of trapping, as other Unix tools do.
enum StandardStreams {
    /// Thrown when stdout's reader has gone (EPIPE); the command stops its work and exits 0.
    struct Closed: Error {}

    /// Ignores SIGPIPE so a closed pipe is an EPIPE error we handle, not a silent kill mid-write.
    static func ignoreBrokenPipeSignal() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes every byte to stdout; throws `Closed` when its reader has gone, `CLIFailure` on other errors.
    static func writeOut(_ bytes: [UInt8]) throws {
        try write(bytes, to: STDOUT_FILENO)
    }

    /// Writes a line to stdout (see `writeOut`).
    static func printOut(_ line: String) throws {
        try write(Array((line + "\n").utf8), to: STDOUT_FILENO)
    }

    /// Writes text to stderr, ignoring failures (there is nowhere left to report them).
    static func writeError(_ text: String) {
        try? write(Array(text.utf8), to: STDERR_FILENO)
    }

    /// Writes all of `bytes` to `descriptor`, retrying short writes and EINTR.
    static func write(_ bytes: [UInt8], to descriptor: Int32) throws {
        try bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var done = 0
            while done < buffer.count {
                #if canImport(Glibc)
                let n = Glibc.write(descriptor, base + done, buffer.count - done)
                #else
                let n = Darwin.write(descriptor, base + done, buffer.count - done)
                #endif
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EPIPE { throw Closed() }
                    throw CLIFailure(message: "cannot write output: \(String(cString: strerror(errno)))", exitCode: 1)
                }
                done += n
            }
        }
    }
}
