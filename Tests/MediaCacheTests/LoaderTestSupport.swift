import Foundation
import MediaOrigin

@testable import MediaCache

/// A store, a loader and an origin in a fresh directory; `restart` simulates a new session on the same cache.
final class LoaderHarness {
    let dir = TemporaryDirectory()
    let origin: MediaOriginServer
    var store: CacheStore
    var loader: MediaLoader
    var configuration: LoaderConfiguration

    init(configuration: LoaderConfiguration = LoaderHarness.defaultConfiguration) async throws {
        origin = try await MediaOriginServer()
        self.configuration = configuration
        store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        loader = MediaLoader(store: store, configuration: configuration)
    }

    static var defaultConfiguration: LoaderConfiguration {
        var configuration = LoaderConfiguration()
        configuration.client.connectTimeout = 30
        configuration.client.readTimeout = 30
        return configuration
    }

    /// A new loader and store on the same directory (a process restart).
    func restart() async throws {
        await loader.shutdown()
        try store.close()
        store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        loader = MediaLoader(store: store, configuration: configuration)
    }

    func url(_ name: String) -> URL { origin.url(name) }

    /// Reads `offset..<offset+length` (to the end when nil) through the loader.
    func read(_ name: String, _ offset: Int64 = 0, _ length: Int64? = nil) async throws -> [UInt8] {
        try await loader.data(LoadingRequest(url: url(name), requestedOffset: offset, requestedLength: length))
    }

    func close() async {
        await loader.shutdown()
        try? store.close()
        await origin.shutdown()
        dir.cleanup()
    }
}

/// Distinct deterministic content: `seed` changes every byte.
func content(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 131) ^ ($0 >> 8) ^ Int(seed) &* 77) }
}
