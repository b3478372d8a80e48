import Foundation
import MediaTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import MediaCache

/// Disk work happens outside the store's lock: a read or a write waiting on a slow disk leaves every other
/// resource free to be looked up meanwhile (a proxy's event loop never waits on another resource's disk).
@Suite struct StoreLockTests {
    @Test(arguments: ["read", "write"])
    func aReadOrWriteWaitingOnTheDiskHoldsNoLock(_ kind: String) async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let faults = StorageFaults()
        let store = try CacheStore.withFaults(faults, directory: dir.url)
        let a = try store.generation(for: "a", length: 100_000)
        let b = try store.generation(for: "b", length: 100_000)
        try store.writePattern("a", generation: a, 0..<50_000)
        try store.writePattern("b", generation: b, 0..<50_000)
        let gate = DiskGate()
        faults.diskGate = gate
        let slowDone = NIOLockedValueBox(false)
        let slow = Thread {
            if kind == "read" {
                _ = try? store.read(key: testKey("a"), range: 0..<50_000)
            } else {
                _ = try? store.writePattern("a", generation: a, 50_000..<60_000)
            }
            slowDone.withLockedValue { $0 = true }
        }
        slow.start()
        #expect(await eventually(within: .seconds(10)) { gate.arrived == 1 }, "the \(kind) never reached the disk")
        // While it waits on the disk, another thread looks up the other resource (and this one).
        let looked = NIOLockedValueBox<ByteRangeSet?>(nil)
        Thread {
            let ranges = store.availableRanges(for: testKey("b"))
            _ = store.info(for: testKey("a"))
            looked.withLockedValue { $0 = ranges }
        }.start()
        let answered = await eventually(within: .seconds(10)) { looked.withLockedValue { $0 } != nil }
        #expect(answered, "a look-up waited for the \(kind) on the disk")
        #expect(looked.withLockedValue { $0 } == ByteRangeSet([0..<50_000]))
        gate.open()
        #expect(await eventually(within: .seconds(10)) { slowDone.withLockedValue { $0 } })
        if kind == "write" {
            #expect(try store.read(key: testKey("a"), range: 50_000..<60_000) == pattern(50_000..<60_000))
        }
        try store.close()
    }
}

/// The proxy's hit path (on an event loop) never waits for the store's lock while something holds it for long (a
/// commit recording ranges in the index): it answers elsewhere instead.
@Suite struct HitPathLockTests {
    @Test func aHitThatMustNotWaitGivesUpWhileTheLockIsHeld() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try store.generation(for: "c", length: 10_000)
        try store.writePattern("c", generation: generation, 0..<10_000)
        try store.commit(key: testKey("c"))
        let open = { (checking: Bool) -> Int32?? in
            store.openCompleteFile(for: testKey("c"), checking: checking) { _ in 0..<10_000 }.map { $0.descriptor }
        }
        if let descriptor = try #require(open(false)) { close(descriptor) }
        // Another thread holds the lock (as a commit does while the index records its ranges).
        let holding = NIOLockedValueBox(false)
        let released = NIOLockedValueBox(false)
        let release = DispatchSemaphore(value: 0)
        Thread {
            store.table.lockedAsSeen { _ in
                holding.withLockedValue { $0 = true }
                release.wait()
            }
            released.withLockedValue { $0 = true }
        }.start()
        #expect(await eventually(within: .seconds(10)) { holding.withLockedValue { $0 } })
        #expect(open(false) == nil)
        release.signal()
        #expect(await eventually(within: .seconds(10)) { released.withLockedValue { $0 } })
        if let descriptor = try #require(open(false)) { close(descriptor) }
        try store.close()
    }
}
