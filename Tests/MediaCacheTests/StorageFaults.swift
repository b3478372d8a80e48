import Foundation
import MediaTestSupport
import NIOConcurrencyHelpers

@testable import MediaCache

/// Disk failures and delays a test makes in a store (a full disk without filling one, a failing sync, a slow
/// disk held still): open the store with one, then change its fields while the test runs.
final class StorageFaults: StorageFaultInjecting {
    private struct Fields {
        var writeErrno: Int32?
        var syncErrno: Int32?
        var giveUpBeforeNextRead: String?
        var diskGate: DiskGate?
    }

    private let fields = NIOLockedValueBox(Fields())

    /// Every data write fails with this errno.
    var writeErrno: Int32? {
        get { fields.withLockedValue { $0.writeErrno } }
        set { fields.withLockedValue { $0.writeErrno = newValue } }
    }

    /// Every data sync fails with this errno.
    var syncErrno: Int32? {
        get { fields.withLockedValue { $0.syncErrno } }
        set { fields.withLockedValue { $0.syncErrno = newValue } }
    }

    /// The next read gives the resource up with this reason first.
    var giveUpBeforeNextRead: String? {
        get { fields.withLockedValue { $0.giveUpBeforeNextRead } }
        set { fields.withLockedValue { $0.giveUpBeforeNextRead = newValue } }
    }

    /// Data reads and writes wait here, where they touch the disk.
    var diskGate: DiskGate? {
        get { fields.withLockedValue { $0.diskGate } }
        set { fields.withLockedValue { $0.diskGate = newValue } }
    }

    func takeGiveUpBeforeNextRead() -> String? {
        fields.withLockedValue { f in
            defer { f.giveUpBeforeNextRead = nil }
            return f.giveUpBeforeNextRead
        }
    }

    func beforeDiskWork() { diskGate?.pass() }
}

extension CacheStore {
    /// A store whose disk work `faults` can make fail or wait.
    static func withFaults(
        _ faults: StorageFaults, directory: URL, configuration: CacheConfiguration = testConfiguration()
    ) throws -> CacheStore {
        try CacheStore(directory: directory, configuration: configuration, opensReadOnly: false, faults: faults)
    }
}

extension CacheHarness {
    /// Opens the harness's store again with `faults` (and a loader over it).
    func reopenStore(faults: StorageFaults) async throws {
        await loader.shutdown()
        try store.close()
        store = try CacheStore.withFaults(faults, directory: directory, configuration: cacheConfiguration)
        loader = MediaLoader(store: store, configuration: configuration)
    }
}

/// A gate disk work waits at until opened, counting who arrived (a test's slow disk).
final class DiskGate: Sendable {
    private let state = NIOLockedValueBox((arrived: 0, open: false))
    private let opened = DispatchSemaphore(value: 0)

    /// How many reads and writes have reached the gate.
    var arrived: Int { state.withLockedValue { $0.arrived } }

    /// Waits until the gate is opened.
    func pass() {
        let wait = state.withLockedValue { s -> Bool in
            s.arrived += 1
            return !s.open
        }
        guard wait else { return }
        opened.wait()
        opened.signal()  // and everyone after
    }

    /// Lets every waiting and later read and write through.
    func open() {
        state.withLockedValue { $0.open = true }
        opened.signal()
    }
}

