import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The write end of the pipe the signal handler reports through (a signal handler can only reach globals).
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// Calls `handler` on SIGINT, SIGTERM or SIGHUP (the terminal closed) instead of the default immediate exit, so
/// work can stop cleanly; remembers the signal so the command then exits as a shell expects (128 + its number:
/// 130 for Ctrl-C, 143 for SIGTERM, 129 for a closed terminal).
///
/// The handlers are in place when `init` returns (a plain signal handler writing the signal's number to a pipe; a
/// thread reads it and calls `handler`), so a signal sent right after the command printed its first line is never
/// lost between an ignored disposition and a watcher not yet listening.
// Sendable: its state is the pipe's descriptors, set in init and never changed, and a locked box.
final class SignalWatcher: @unchecked Sendable {
    private static let signals = [SIGINT, SIGTERM, SIGHUP]
    private let received = NIOLockedValueBox<Int32?>(nil)
    private let readEnd: Int32
    private let writeEnd: Int32

    init(handler: @escaping @Sendable () -> Void) {
        // A parent may have left these signals blocked (the mask is inherited across exec): a blocked SIGINT stays
        // pending and the command would play on to the end. Unblocked here, and in every thread started after.
        var wanted = sigset_t()
        sigemptyset(&wanted)
        for number in Self.signals { sigaddset(&wanted, number) }
        pthread_sigmask(SIG_UNBLOCK, &wanted, nil)
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 { ends = [-1, -1] }
        readEnd = ends[0]
        writeEnd = ends[1]
        signalPipe = writeEnd
        let received = received
        let readEnd = readEnd
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n < 0, errno == EINTR { continue }
                guard n == 1 else {
                    // The write end closed: stopped.
                    close(readEnd)
                    return
                }
                received.withLockedValue { $0 = $0 ?? Int32(byte) }
                handler()
            }
        }
        thread.name = "stories-tui signals"
        thread.start()
        for number in Self.signals {
            signal(number) { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalPipe, &byte, 1)
            }
        }
    }

    /// The exit code for the first signal received (128 + its number), nil when none came.
    var exitCode: Int32? { received.withLockedValue { $0.map { 128 + $0 } } }

    /// Restores the default handlers and ends the reading thread.
    func stop() {
        for number in Self.signals { signal(number, SIG_DFL) }
        if writeEnd >= 0 { close(writeEnd) }
    }

    /// After the command cleaned up: exits with the signal's code when one stopped it.
    func exitIfSignalled() {
        if let code = exitCode { Foundation.exit(code) }
    }
}
