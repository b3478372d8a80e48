import Foundation

/// What was passed over while reading the sources, and how it is said.
extension StorySources {
    /// One line saying what was passed over and why, nil when nothing was.
    public var skippedNote: String? { Self.note(skipped) }

    /// What `skipped` counts, in one line.
    /// Feed items are counted under `item:` reasons (`item:older than 24 h`), files under the rest.
    static func note(_ skipped: [String: Int]) -> String? {
        guard !skipped.isEmpty else { return nil }
        func line(_ counts: [(key: String, value: Int)], _ noun: String) -> String? {
            guard !counts.isEmpty else { return nil }
            let total = counts.reduce(0) { $0 + $1.value }
            let reasons = counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            return "skipped \(total) \(noun)\(total == 1 ? "" : "s") (\(reasons))"
        }
        let items = skipped.filter { $0.key.hasPrefix(itemReason) }.map { (key: String($0.key.dropFirst(itemReason.count)), value: $0.value) }
        let files = skipped.filter { !$0.key.hasPrefix(itemReason) }.map { (key: $0.key, value: $0.value) }
        return [line(files, "file"), line(items, "feed item")].compactMap { $0 }.joined(separator: "; ")
    }

    /// A file or list entry that was not played, and why.
    public struct SkippedFile: Sendable, Equatable {
        /// Its path (or the list's line, for an entry that names no file).
        public var path: String
        /// Why it was passed over, as `skipped` counts it.
        public var reason: String
    }

    /// The prefix of the reasons feed items are passed over for.
    public static let itemReason = "item:"
}
