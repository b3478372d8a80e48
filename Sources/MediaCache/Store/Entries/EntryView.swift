import Foundation
import NIOConcurrencyHelpers

/// What readers see of this process's entries without the store's lock: each entry's info as the table last took
/// it (its ranges the readable ones, this process's unrecorded writes included), the keys it found not cached, and
/// when it last looked at other processes' changes. The table publishes here, under its lock, at every change; a
/// reader trusts what is published only while that look is younger than it asks for, and otherwise asks the table
/// (which looks, and publishes). A player's wake, an HLS story's segments and the figures of a status pane read
/// here; the lock is left to writers and to readers of bytes.
final class EntryView: Sendable {
    /// What a look finds.
    enum Answer {
        case cached(ResourceInfo)
        case notCached
        /// Not published, or published before a look older than asked for: ask the table.
        case unknown
    }

    private struct State {
        var infos: [CacheKey: ResourceInfo] = [:]
        var absent: Set<CacheKey> = []
        /// When the table last looked at other processes' changes (monotonic nanoseconds).
        var checkedAt: UInt64 = 0
    }

    /// Keys found not cached that are remembered (beyond it, the set starts again).
    static let maxAbsent = 4096
    private let state = NIOLockedValueBox(State())

    /// `key` as published, trusted when the table looked at other processes' changes less than `maxAge`
    /// nanoseconds ago.
    func look(_ key: CacheKey, within maxAge: UInt64) -> Answer {
        state.withLockedValue { s in
            guard DispatchTime.now().uptimeNanoseconds &- s.checkedAt < maxAge else { return .unknown }
            if let info = s.infos[key] { return .cached(info) }
            return s.absent.contains(key) ? .notCached : .unknown
        }
    }

    /// Publishes `entry` as `key`'s (nil: not cached).
    func publish(_ key: CacheKey, _ entry: StoreEntry?) {
        state.withLockedValue { s in
            if let entry {
                var info = entry.info
                info.ranges = entry.written
                s.infos[key] = info
                s.absent.remove(key)
            } else {
                s.infos.removeValue(forKey: key)
                if s.absent.count >= Self.maxAbsent { s.absent.removeAll() }
                s.absent.insert(key)
            }
        }
    }

    /// Takes back what was published of `key`: readers ask the table again.
    func withdraw(_ key: CacheKey) {
        state.withLockedValue { s in
            s.infos.removeValue(forKey: key)
            s.absent.remove(key)
        }
    }

    /// The table looked at other processes' changes at `time`; `changed` when it found one (everything
    /// published is then withdrawn).
    func looked(at time: UInt64, changed: Bool) {
        state.withLockedValue { s in
            s.checkedAt = time
            if changed {
                s.infos.removeAll()
                s.absent.removeAll()
            }
        }
    }

    /// Withdraws everything (the store closes).
    func clear() {
        state.withLockedValue { s in
            s.infos.removeAll()
            s.absent.removeAll()
        }
    }
}
