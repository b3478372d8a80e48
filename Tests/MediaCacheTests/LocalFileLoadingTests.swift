import Foundation
@testable import MediaCache
import Testing

/// `file:` URLs are read straight from disk through the loader's interface: exact bytes, nothing cached,
/// nothing counted as cache or origin traffic, nothing to preload.
@Suite struct LocalFileLoadingTests {
    private func setUp() throws -> (URL, MediaLoader, [UInt8]) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("local-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let bytes = (0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let file = directory.appendingPathComponent("clip one.mp4")
        try Data(bytes).write(to: file)
        var configuration = CacheConfiguration()
        configuration.minimumFreeDiskBytes = 0
        let store = try CacheStore(directory: directory.appendingPathComponent("cache"), configuration: configuration)
        return (file, MediaLoader(store: store), bytes)
    }

    @Test func aFileIsReadFromDiskAndNeverCached() async throws {
        let (file, loader, bytes) = try setUp()
        let info = try await loader.contentInformation(for: file)
        #expect(info.contentLength == Int64(bytes.count))
        #expect(info.lastModified != nil)
        let middle = try await loader.data(LoadingRequest(url: file, requestedOffset: 300_000, requestedLength: 5_000))
        #expect(middle == Array(bytes[300_000..<305_000]))
        var whole: [UInt8] = []
        for try await chunk in loader.load(LoadingRequest(url: file)) {
            #expect(chunk.source == .local)
            #expect(chunk.offset == Int64(whole.count))
            whole += chunk.bytes
        }
        #expect(whole == bytes)
        #expect(loader.store.allResources().isEmpty)
        #expect(loader.metrics.cacheBytes == 0 && loader.metrics.originBytesReceived == 0)
        await loader.shutdown()
    }

    @Test func aFileNeedsNoPreloadAndAMissingOneFailsInASentence() async throws {
        let (file, loader, bytes) = try setUp()
        let preloader = Preloader(loader: loader)
        let progress = try await preloader.preload(PreloadTarget(url: file, amount: .seconds(3)))
        #expect(progress.phase == .preloaded)
        #expect(progress.neededBytes == Int64(bytes.count))
        #expect(loader.store.allResources().isEmpty)
        let gone = file.deletingLastPathComponent().appendingPathComponent("gone.mp4")
        do {
            _ = try await loader.contentInformation(for: gone)
            Issue.record("a missing file had content information")
        } catch {
            #expect("\(error)" == "\(gone.path): no longer exists")
        }
        do {
            _ = try await loader.data(LoadingRequest(url: file, requestedOffset: Int64(bytes.count) + 10))
            Issue.record("a range past the end was read")
        } catch {
            #expect("\(error)".contains("range"), "\(error)")
        }
        await preloader.stop()
        await loader.shutdown()
    }
}
