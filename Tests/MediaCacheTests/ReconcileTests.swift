import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ReconcileTests {
    @Test func rangesPastTheFileEndAreDroppedWhenFirstUsed() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let key = testKey("t.mp4")
        let path: String
        do {
            let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
            let generation = try store.generation(for: "t.mp4", length: 10_000)
            try store.writePattern("t.mp4", generation: generation, 0..<1_000)
            try store.writePattern("t.mp4", generation: generation, 4_000..<6_000)
            path = try store.dataPath(key)
            try store.close()
        }
        // Simulate a file that lost its tail (e.g. restored from an older backup).
        #expect(truncate(path, 5_000) == 0)
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(store.availableRanges(for: key).ranges == [0..<1_000, 4_000..<5_000])
        #expect(store.recovery.rangesClamped == 1)
        #expect(try store.read(key: key, range: 4_000..<5_000) == pattern(4_000..<5_000))
        try store.close()
        // The repair was recorded: a third open finds nothing to fix.
        let reopened = try reopen(store, dir)
        #expect(!reopened.recovery.repairedAnything)
    }

    /// The sweep runs once a day, and after a crash (see `sigkillMidWriteNeverLeavesWrongBytes`).
    @Test func orphanFilesAndRowsWithoutFilesAreRemovedByTheDailySweep() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let configuration = testConfiguration { $0.partialMaxAge = 30 * 86_400 }
        do {
            let store = try CacheStore(directory: dir.url, configuration: configuration, now: clock.closure)
            for name in ["keep", "lose"] {
                let generation = try store.generation(for: name, length: 100)
                try store.writePattern(name, generation: generation, 0..<50)
            }
            unlink(try store.dataPath(testKey("lose")))
            try store.close()
        }
        let strays = [
            "temp/\(CacheKey(custom: "stray").hex).7", "media/\(CacheKey(custom: "stray2").hex)", "media/notes.txt",
        ]
        for stray in strays {
            #expect(FileManager.default.createFile(atPath: dir.url.appendingPathComponent(stray).path, contents: Data([1, 2, 3])))
        }
        // Within a day of the last sweep, a clean cache opens without listing its folders.
        clock.advance(by: 3_600)
        let early = try CacheStore(directory: dir.url, configuration: configuration, now: clock.closure)
        #expect(early.recovery.orphanFilesRemoved == 0)
        try early.close()
        clock.advance(by: Reconciler.sweepInterval)
        let store = try CacheStore(directory: dir.url, configuration: configuration, now: clock.closure)
        #expect(store.recovery.rowsWithoutFileDropped == 1)
        #expect(store.recovery.orphanFilesRemoved == 3)
        #expect(store.allResources().map(\.key) == [testKey("keep")])
        for stray in strays {
            #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent(stray).path))
        }
        #expect(try store.read(key: testKey("keep"), range: 0..<50) == pattern(0..<50))
    }

    @Test func garbledIndexIsMovedAsideAndRebuilt() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        do {
            let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
            let generation = try store.generation(for: "g.mp4", length: 100)
            try store.writePattern("g.mp4", generation: generation, 0..<100)
            try store.close()
        }
        let indexPath = dir.url.appendingPathComponent("index.sqlite").path
        var random = SeededGenerator(seed: 42)
        let garbage = Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &random) })
        for suffix in ["-wal", "-shm"] { unlink(indexPath + suffix) }
        #expect(FileManager.default.createFile(atPath: indexPath, contents: garbage))

        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let aside = try #require(store.recovery.indexMovedAside)
        #expect(FileManager.default.contents(atPath: aside) == garbage)
        // Without a trustworthy index the data file cannot be vouched for: it is removed, never served.
        #expect(store.recovery.orphanFilesRemoved == 1)
        #expect(store.allResources().isEmpty)
        // And the new index works.
        let generation = try store.generation(for: "g.mp4", length: 100)
        try store.writePattern("g.mp4", generation: generation, 0..<100)
        try store.close()
        let reopened = try reopen(store, dir)
        #expect(reopened.info(for: testKey("g.mp4"))?.isComplete == true)
    }

    /// A child process writes and commits until it is SIGKILLed; whatever the index then claims must be exactly
    /// the pattern, and the cache must open without complaint.
    @Test(arguments: [3, 9, 17]) func sigkillMidWriteNeverLeavesWrongBytes(commitsBeforeKill: Int) async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let length: Int64 = 64 << 20
        let process = try ChildProcess(try helperURL().path, [dir.url.path, String(length), "16384"], stdout: .pipe)
        // Blocking reads and the wait, off the cooperative pool (other tests' tasks need its threads meanwhile).
        let (seen, termination) = try await offCooperativePool { () -> (Int, ChildProcess.Termination) in
            var seen = 0
            var buffer = Data()
            while seen < commitsBeforeKill, let chunk = process.stdout?.availableData, !chunk.isEmpty {
                buffer.append(chunk)
                seen = String(decoding: buffer, as: UTF8.self).components(separatedBy: "committed").count - 1
            }
            process.send(SIGKILL)
            return (seen, process.waitUntilExit())
        }
        #expect(termination == .signalled(SIGKILL), "the helper must die mid-write, not finish")
        #expect(seen >= commitsBeforeKill)

        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let key = CacheKey(url: try #require(URL(string: "http://127.0.0.1/crash.bin")))
        let ranges = store.availableRanges(for: key)
        #expect(ranges.total >= Int64(commitsBeforeKill) * 3 * 16384)
        #expect(ranges.total < length)
        for range in ranges {
            var offset = range.lowerBound
            while offset < range.upperBound {
                let end = min(range.upperBound, offset + (1 << 20))
                #expect(try store.read(key: key, range: offset..<end) == pattern(offset..<end))
                offset = end
            }
        }
        #expect(store.recovery.indexMovedAside == nil)
    }

    private func reopen(_ store: CacheStore, _ dir: TemporaryDirectory) throws -> CacheStore {
        try store.close()
        return try CacheStore(directory: dir.url, configuration: testConfiguration())
    }

    private func helperURL() throws -> URL {
        let candidates = [Bundle.main.executableURL, URL(fileURLWithPath: CommandLine.arguments[0])]
            .compactMap { $0?.deletingLastPathComponent().appendingPathComponent("CacheCrashHelper") }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw CacheError.io("CacheCrashHelper not found next to the test binary (\(candidates.map(\.path)))")
    }
}
