import Foundation

/// Where the store's disk work can be made to fail or wait: a full disk, a failing sync or a slow disk without
/// having one. The store asks it at the places it touches the disk; tests implement it.
protocol StorageFaultInjecting: AnyObject, Sendable {
    /// The errno every data write fails with, if any.
    var writeErrno: Int32? { get }
    /// The errno every data sync fails with, if any.
    var syncErrno: Int32? { get }
    /// The reason to give the resource up with before the next read (once), as a writer that outgrew the budget
    /// does between a reader's look at what is cached and its read.
    func takeGiveUpBeforeNextRead() -> String?
    /// Called where a data read or write touches the disk, outside the store's lock; may block.
    func beforeDiskWork()
}
