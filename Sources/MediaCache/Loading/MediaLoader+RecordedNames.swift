import Foundation

extension MediaLoader {
    /// Records `key`'s entries under `name` instead of the URL fetched: a file on this machine served over a
    /// simulated link is listed by its own URL (`file:///…`), not by the link's address, which changes every run.
    /// The most recent 4,096 keys are remembered.
    public func record(_ key: CacheKey, as name: URL) {
        recordedNames.withLockedValue { names in
            if names.count >= 4096, names[key] == nil, let any = names.keys.first { names.removeValue(forKey: any) }
            names[key] = name.absoluteString
        }
    }

    /// Prepares `key` in the store with `metadata`, under the name it is recorded as (see `record(_:as:)`).
    func prepare(_ key: CacheKey, _ metadata: ResourceMetadata, replacing: Bool = false) throws -> Admission {
        var metadata = metadata
        if let name = recordedNames.withLockedValue({ $0[key] }) { metadata.url = name }
        return try store.prepare(key: key, metadata: metadata, replacing: replacing)
    }
}
