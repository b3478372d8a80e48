import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

/// Readers are told of changes instead of looking at an interval: the signal itself, this process's writes, and
/// another process's commit noticed by the one watcher of the index's data version.
@Suite(.timeLimit(.minutes(2))) struct ChangeSignalTests {
    @Test func aWaiterWakesOnTheNextChangeAndNeverMissesOneBetweenLooks() async {
        let signal = ChangeSignal()
        let seen = signal.version
        signal.signal()
        // Changed since it looked: returns at once.
        await signal.wait(after: seen)
        let now = signal.version
        #expect(now == seen + 1)
        let waiter = Task { await signal.wait(after: now) }
        while !signal.isAwaited { await Task.yield() }
        signal.signal()
        await waiter.value
        #expect(signal.version == now + 1)
        // A cancelled waiter returns and leaves nothing parked.
        let cancelled = Task { await signal.wait(after: signal.version) }
        cancelled.cancel()
        await cancelled.value
        #expect(!signal.isAwaited)
    }

    @Test func bytesWrittenHereSignalAtOnce() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let loader = MediaLoader(store: store)
        let generation = try store.generation(for: "v", length: 200_000)
        let seen = loader.cacheVersion
        let waiter = Task { await loader.waitForChange(after: seen) }
        try store.writePattern("v", generation: generation, 0..<65_536)
        await waiter.value
        #expect(loader.cacheVersion > seen)
        await loader.shutdown()
    }

    /// Two stores on one directory stand for two processes: the second's commit reaches the first's waiter
    /// without the first reading anything.
    @Test func anotherProcesssCommitReachesAWaiter() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let here = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let other = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let loader = MediaLoader(store: here)
        let seen = loader.cacheVersion
        let waiter = Task { await loader.waitForChange(after: seen) }
        let generation = try other.generation(for: "v", length: 100_000)
        try other.writePattern("v", generation: generation, 0..<100_000)
        try other.commit(key: testKey("v"))
        await waiter.value
        #expect(loader.cachedRanges(testKey("v")).total == 100_000)
        await loader.shutdown()
        try other.close()
    }
}

/// The cached-range view: readers get an entry's info without the store's lock, and never one older than the look
/// at other processes' changes they ask for.
@Suite(.timeLimit(.minutes(2))) struct EntryViewTests {
    @Test func aReaderIsAnsweredWhileAWriterHoldsTheStoreLock() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try store.generation(for: "v", length: 200_000)
        try store.writePattern("v", generation: generation, 0..<65_536)
        #expect(store.info(for: testKey("v"))?.ranges.total == 65_536)
        // A commit recording ranges holds the lock for a while: here, until the reader has its answer.
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            store.table.lockedAsSeen { _ in
                held.signal()
                release.wait()
            }
        }
        holder.start()
        held.wait()
        let seen = store.info(for: testKey("v"), noticingChangesWithin: .max)
        release.signal()
        #expect(seen?.ranges == ByteRangeSet([0..<65_536]))
        #expect(seen?.generation == generation)
        try store.close()
    }

    @Test func anotherProcesssChangeIsNeverHiddenFromAReaderAskingForAFreshLook() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let here = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let other = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try other.generation(for: "v", length: 100_000)
        #expect(here.info(for: testKey("v"), noticingChangesWithin: .max)?.ranges.isEmpty == true)
        try other.writePattern("v", generation: generation, 0..<100_000)
        try other.commit(key: testKey("v"))
        // One nanosecond: the view's last look is older, so the table looks, notices and publishes.
        #expect(here.info(for: testKey("v"), noticingChangesWithin: 1)?.ranges.total == 100_000)
        #expect(here.info(for: testKey("v"), noticingChangesWithin: .max)?.state == .complete)
        try other.remove(key: testKey("v"))
        #expect(here.info(for: testKey("v"), noticingChangesWithin: 1) == nil)
        #expect(here.info(for: testKey("v"), noticingChangesWithin: .max) == nil, "the removal was published")
        try here.close()
        try other.close()
    }
}
