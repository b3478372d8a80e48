import Foundation
import NIOConcurrencyHelpers
import MediaOrigin
import MediaTestSupport
import Testing

@testable import MediaCache

/// Several stores open on one directory at once, as several processes would be: Linux's open-file-description
/// locks make two stores in one process exclude each other exactly as two processes do. (The real-process test is
/// `SharedCacheProcessTests` in the command-line suite.)
@Suite struct SharedDirectoryTests {
    @Test func rangesTwoStoresRecordAddUpInsteadOfOverwritingEachOther() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let a = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let b = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try a.generation(for: "v", length: 300_000)
        #expect(b.info(for: testKey("v"))?.generation == generation)
        try a.writePattern("v", generation: generation, 0..<100_000)
        try b.writePattern("v", generation: generation, 200_000..<300_000)
        try a.commit(key: testKey("v"))
        try b.commit(key: testKey("v"))
        // Each sees the other's ranges without reopening.
        #expect(a.availableRanges(for: testKey("v")) == ByteRangeSet([0..<100_000, 200_000..<300_000]))
        #expect(try a.read(key: testKey("v"), range: 200_000..<300_000) == pattern(200_000..<300_000))
        try a.writePattern("v", generation: generation, 100_000..<200_000)
        try a.commit(key: testKey("v"))
        #expect(b.info(for: testKey("v"))?.state == .complete)
        #expect(try b.read(key: testKey("v"), range: 0..<300_000) == pattern(0..<300_000))
        try a.close()
        try b.close()
        let reopened = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(reopened.info(for: testKey("v"))?.isComplete == true)
        #expect(try reopened.stats().completeBytes == 300_000)
        #expect(try reopened.stats().partialBytes == 0)
        try reopened.close()
    }

    /// A store still holding an evicted version never writes into the version that replaced it, even when the
    /// key comes back at once: generations are unique for the directory's life and name the data files.
    @Test func aStaleWriterNeverTouchesTheVersionThatReplacedItsOwn() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let a = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let b = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let old = try b.generation(for: "v", length: 1_000)
        try b.writePattern("v", generation: old, 0..<500)
        #expect(try a.remove(key: testKey("v")))
        let new = try a.generation(for: "v", length: 1_000, etag: "\"v2\"")
        #expect(new != old)
        let replacement = [UInt8](repeating: 0xAB, count: 1_000)
        try a.write(key: testKey("v"), generation: new, offset: 0, bytes: replacement)
        // B's unrecorded bytes of the old version went to the old file; recording them now changes nothing.
        try? b.commit(key: testKey("v"))
        #expect(throws: CacheError.resourceChanged(testKey("v"))) {
            try b.write(key: testKey("v"), generation: old, offset: 500, bytes: pattern(500..<1_000))
        }
        #expect(try b.read(key: testKey("v"), range: 0..<1_000) == replacement)
        #expect(try a.read(key: testKey("v"), range: 0..<1_000) == replacement)
        try a.close()
        try b.close()
    }

    /// Eviction renames a file away; another store reading it keeps reading the right bytes through its open file
    /// or finds the entry gone — never a truncated or reused file.
    @Test func evictionElsewhereNeverHandsAReaderWrongBytes() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let a = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let b = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try a.generation(for: "v", length: 200_000)
        try a.writePattern("v", generation: generation, 0..<200_000)
        #expect(try b.read(key: testKey("v"), range: 0..<100_000) == pattern(0..<100_000))
        #expect(try a.remove(key: testKey("v")))
        #expect(throws: CacheError.notCached(testKey("v"))) {
            try b.read(key: testKey("v"), range: 100_000..<200_000)
        }
        #expect(b.info(for: testKey("v")) == nil)
        try a.close()
        try b.close()
    }

    @Test func evictionPassesByWhatAnotherStorePlays() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let configuration = testConfiguration { $0.completeByteLimit = 2_500 }
        let a = try CacheStore(directory: dir.url, configuration: configuration, now: clock.closure)
        let b = try CacheStore(directory: dir.url, configuration: configuration, now: clock.closure)
        for name in ["old", "newer"] {
            clock.advance(by: 1)
            let generation = try a.generation(for: name, length: 1_000)
            try a.writePattern(name, generation: generation, 0..<1_000)
        }
        b.pin(testKey("old"))
        clock.advance(by: 1)
        let generation = try a.generation(for: "newest", length: 1_000)
        try a.writePattern("newest", generation: generation, 0..<1_000)
        // Over budget once "newest" completed: the least recently used entry is "old", but B plays it.
        #expect(Set(a.allResources().map(\.key)) == Set([testKey("old"), testKey("newest")]))
        #expect(try b.read(key: testKey("old"), range: 0..<1_000) == pattern(0..<1_000))
        b.unpin(testKey("old"))
        try a.close()
        try b.close()
    }

    /// Two loaders on one directory reading the same video at once download it once: the second waits for the
    /// first's bytes instead of fetching them too.
    @Test(.timeLimit(.minutes(5))) func twoLoadersReadingOneVideoDownloadItOnce() async throws {
        let bytes = content(1_500_000)
        let origin = try await MediaOriginServer(profile: NetworkProfile(bytesPerSecond: 3_000_000, latency: 0))
        origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        let h = try await LoaderHarness(origin: origin)
        let otherStore = try CacheStore(directory: h.directory, configuration: h.cacheConfiguration)
        let other = MediaLoader(store: otherStore, configuration: h.configuration)
        let url = h.url("v.mp4")
        async let first = h.loader.data(LoadingRequest(url: url, requestedOffset: 0, requestedLength: nil))
        async let second = other.data(LoadingRequest(url: url, requestedOffset: 0, requestedLength: nil))
        let (one, two) = try await (first, second)
        #expect(one == bytes)
        #expect(two == bytes)
        // Without the claims each loader downloads it all (twice the size). On a loaded machine the origin's count
        // also includes bytes it pushed into a socket whose fetch had just ended (up to a quarter more was seen).
        #expect(
            origin.bodyBytesSent <= Int64(bytes.count) * 3 / 2,
            "sent \(origin.bodyBytesSent): \(origin.requests.map { "\($0.range ?? "whole") → \($0.bodyBytes)" })")
        await other.shutdown()
        try otherStore.close()
        await h.close()
    }

    /// Another process fetches, records and lets go of the bytes between this loader's plan and its lock: the
    /// fetch finds them in the index and the reader reads them from disk, without a second download.
    @Test func bytesRecordedByAnotherProcessBeforeTheLockAreNotFetchedAgain() async throws {
        let bytes = content(400_000)
        let h = try await LoaderHarness()
        let resource = OriginResource(bytes: bytes)
        h.origin.set(resource, at: "/v.mp4")
        let url = h.url("v.mp4")
        let key = CacheKey(url: url)
        let otherStore = try CacheStore(directory: h.directory, configuration: h.cacheConfiguration)
        h.store.locks.beforeNextFetchLock.withLockedValue { hook in
            hook = {
                let metadata = ResourceMetadata(
                    url: url.absoluteString, contentLength: Int64(bytes.count), contentType: resource.contentType,
                    etag: resource.etag)
                guard case .cacheable(let generation, _)? = try? otherStore.prepare(key: key, metadata: metadata)
                else { return }
                _ = try? otherStore.write(key: key, generation: generation, offset: 0, bytes: bytes)
                try? otherStore.commit(key: key)
            }
        }
        #expect(try await h.read("v.mp4") == bytes)
        #expect(h.origin.bodyBytesSent == 0, "\(h.origin.requests.map { "\($0.range ?? "whole") → \($0.bodyBytes)" })")
        try otherStore.close()
        await h.close()
    }

    /// Opening reads no entry: the cost of opening does not grow with the number of entries.
    @Test func openingReadsNoEntryUntilOneIsUsed() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        do {
            let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
            for index in 0..<200 {
                let generation = try store.generation(for: "e\(index)", length: 10)
                try store.writePattern("e\(index)", generation: generation, 0..<10)
            }
            try store.close()
        }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(store.table.lockedAsSeen { s in s.resources.values.filter { $0.entry != nil }.count } == 0)
        #expect(try store.stats().entries == 200)
        #expect(try store.stats().completeBytes == 2_000)
        #expect(try store.read(key: testKey("e7"), range: 0..<10) == pattern(0..<10))
        #expect(store.table.lockedAsSeen { s in s.resources.values.filter { $0.entry != nil }.count } == 1)
        try store.close()
    }

    /// A cache written before data files were named by generation keeps its bytes.
    @Test func filesUnderTheOldNamesAreKept() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let path: String
        let legacy: String
        do {
            let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
            let generation = try store.generation(for: "old", length: 100)
            try store.writePattern("old", generation: generation, 0..<100)
            path = try store.dataPath(testKey("old"))
            legacy = dir.url.appendingPathComponent("media/\(testKey("old").hex)").path
            try store.close()
        }
        try FileManager.default.moveItem(atPath: path, toPath: legacy)
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(try store.read(key: testKey("old"), range: 0..<100) == pattern(0..<100))
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(!store.recovery.repairedAnything)
        try store.close()
    }

    /// Each command opens the index: a process that only looks (open, look up, read, close) must cost it no write —
    /// no new write-ahead log created and synced at open, no checkpoint with its syncs at close.
    @Test func aProcessThatOnlyLooksWritesNothingToTheIndex() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let index = dir.url.appendingPathComponent("index.sqlite").path
        do {
            let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
            let generation = try store.generation(for: "v", length: 100)
            try store.writePattern("v", generation: generation, 0..<100)
            try store.touch(key: testKey("v"))
            try store.close()
        }
        // The log outlives the last process (it is not deleted and re-created by the next one).
        #expect(FileManager.default.fileExists(atPath: index + "-wal"))
        let before = [index, index + "-wal"].map { FileManager.default.contents(atPath: $0) }
        do {
            let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
            #expect(store.info(for: testKey("v"))?.isComplete == true)
            #expect(try store.stats().entries == 1)
            try store.close()
        }
        let after = [index, index + "-wal"].map { FileManager.default.contents(atPath: $0) }
        #expect(after == before)
        // And what is in the log is there for the next process.
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(try store.read(key: testKey("v"), range: 0..<100) == pattern(0..<100))
        try store.close()
    }

    @Test func aReadOnlyStoreChangesNothingAndSeesWhatOthersRecord() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let writer = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let index = dir.url.appendingPathComponent("index.sqlite").path
        let reader = try CacheStore(directory: dir.url, configuration: testConfiguration(), readOnly: true)
        #expect(reader.isReadOnly)
        let generation = try writer.generation(for: "v", length: 100)
        try writer.writePattern("v", generation: generation, 0..<100)
        let before = try FileManager.default.attributesOfItem(atPath: index)[.modificationDate] as? Date
        #expect(try reader.read(key: testKey("v"), range: 0..<100) == pattern(0..<100))
        #expect(try reader.stats().entries == 1)
        try reader.close()
        #expect(try FileManager.default.attributesOfItem(atPath: index)[.modificationDate] as? Date == before)
        try writer.close()
    }

    /// Eight stores (eight processes) opening a new directory at the same moment: one creates the index, the
    /// others wait for it and use it; none fails with "table already exists". Repeated over fresh directories,
    /// since one round may happen to run in turn.
    @Test func eightStoresOpeningANewDirectoryAtOnceAllSucceed() async throws {
        for _ in 0..<12 {
            let dir = TemporaryDirectory()
            defer { dir.cleanup() }
            let count = 8
            let results = NIOLockedValueBox<[String]>([])
            let ready = DispatchGroup()
            let go = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for _ in 0..<count {
                ready.enter()
                done.enter()
                Thread.detachNewThread {
                    ready.leave()
                    go.wait()
                    let outcome: String
                    do {
                        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
                        _ = try store.generation(for: "v", length: 10)
                        try store.close()
                        outcome = "ok"
                    } catch {
                        outcome = "\(error)"
                    }
                    results.withLockedValue { $0.append(outcome) }
                    done.leave()
                }
            }
            // The waits run off the cooperative pool (other tests' tasks need its threads meanwhile).
            try await offCooperativePool {
                ready.wait()
                for _ in 0..<count { go.signal() }
                done.wait()
            }
            #expect(results.withLockedValue { $0 } == Array(repeating: "ok", count: count))
        }
    }
}
