import NIOConcurrencyHelpers

/// The one place another process's change to the cache is looked for on its own: SQLite tells no process of
/// another's commit, so while some reader waits for a change, the index's data version is read every `interval`
/// (a look another reader took meanwhile counts) and a move shows on the store's change signal. Nobody waiting,
/// nothing runs.
final class CacheWatcher: Sendable {
    private struct State: Sendable {
        var waiting = 0
        var running = false
    }

    private let state = NIOLockedValueBox(State())
    private let store: CacheStore
    private let interval: UInt64

    /// A watcher of `store` that looks every `interval` nanoseconds while someone waits.
    init(store: CacheStore, interval: UInt64) {
        self.store = store
        self.interval = interval
    }

    /// Returns once the cache changed since `seen` (a version of `store.changes`), here or in another process, or
    /// when the task is cancelled.
    func wait(after seen: UInt64) async {
        let start = state.withLockedValue { s -> Bool in
            s.waiting += 1
            defer { s.running = true }
            return !s.running
        }
        if start { Task.detached { [self] in await look() } }
        await store.changes.wait(after: seen)
        state.withLockedValue { $0.waiting -= 1 }
    }

    private func look() async {
        while state.withLockedValue({ s -> Bool in
            if s.waiting == 0 { s.running = false }
            return s.running
        }) {
            store.noticeOtherProcesses(within: interval)
            try? await Task.sleep(for: .nanoseconds(interval))
        }
    }
}
