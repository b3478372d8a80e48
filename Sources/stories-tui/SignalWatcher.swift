import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// Calls `handler` on SIGINT, SIGTERM or SIGHUP (the terminal closed) instead of the default immediate exit, so
/// work can stop cleanly; remembers the signal so the command then exits as a shell expects (128 + its number:
/// 130 for Ctrl-C, 143 for SIGTERM, 129 for a closed terminal).
final class SignalWatcher: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]
    private let received = NIOLockedValueBox<Int32?>(nil)

    init(handler: @escaping @Sendable () -> Void) {
        let received = received
        sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                received.withLockedValue { $0 = $0 ?? number }
                handler()
            }
            source.resume()
            return source
        }
    }

    /// The exit code for the first signal received (128 + its number), nil when none came.
    var exitCode: Int32? { received.withLockedValue { $0.map { 128 + $0 } } }

    /// Restores the default handlers.
    func stop() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
        signal(SIGHUP, SIG_DFL)
    }

    /// After the command cleaned up: exits with the signal's code when one stopped it.
    func exitIfSignalled() {
        if let code = exitCode { Foundation.exit(code) }
    }
}
