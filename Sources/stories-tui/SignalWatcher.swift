import Dispatch
import Foundation

/// Calls `handler` on SIGINT, SIGTERM or SIGHUP (the terminal closed) (instead of the default immediate exit), so work can stop cleanly.
final class SignalWatcher: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]

    init(handler: @escaping @Sendable () -> Void) {
        sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    /// Restores the default handlers.
    func stop() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
        signal(SIGHUP, SIG_DFL)
    }
}
