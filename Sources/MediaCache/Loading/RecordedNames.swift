import Foundation
import NIOConcurrencyHelpers

/// The names entries are recorded under instead of the URL fetched: a file on this machine served over a
/// simulated link is listed by its own URL (`file:///…`), not by the link's address, which changes every run.
/// Entries are admitted to the store through it. The most recent 4,096 keys are remembered.
final class RecordedNames: Sendable {
    private let store: CacheStore
    private let names = NIOLockedValueBox([CacheKey: String]())

    /// Names for entries of `store`.
    init(store: CacheStore) { self.store = store }

    /// Records `key`'s entries under `name`.
    func record(_ key: CacheKey, as name: URL) {
        names.withLockedValue { names in
            if names.count >= 4096, names[key] == nil, let any = names.keys.first { names.removeValue(forKey: any) }
            names[key] = name.absoluteString
        }
    }

    /// Prepares `key` in the store with `metadata`, under the name it is recorded as.
    func prepare(_ key: CacheKey, _ metadata: ResourceMetadata, replacing: Bool = false) throws -> Admission {
        var metadata = metadata
        if let name = names.withLockedValue({ $0[key] }) { metadata.url = name }
        return try store.prepare(key: key, metadata: metadata, replacing: replacing)
    }
}
