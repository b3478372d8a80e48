import Foundation

/// The table from open to close: what was repaired on the way in, and letting go of its entries and files.
extension EntryTable {
    /// Takes `report` as what was repaired so far (joining the directory adds to the report it started from).
    func noteRecovery(_ s: inout StoreState, _ report: RecoveryReport) { s.recovery = report }

    /// Marks the table closed; false when it already was.
    func markClosed(_ s: inout StoreState) -> Bool {
        defer { s.closed = true }
        return !s.closed
    }

    /// Closes every open data file (a read-only store has nothing else to let go of).
    func closeFiles(_ s: inout StoreState) { s.closeFiles() }

    /// Writes the access times still in memory, then lets go of every entry and file (after the last commit).
    func close(_ s: inout StoreState) throws {
        try flushAccessTimes(&s)
        for key in Array(s.resources.keys) {
            s.update(key) { held in
                held.entry = nil
                held.file = nil
            }
        }
        view.clear()
    }
}
