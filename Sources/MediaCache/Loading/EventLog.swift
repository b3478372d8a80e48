import Foundation
import NIOConcurrencyHelpers

/// An optional JSON-lines log of what the cache does (fetches, validations, requests), one object per line.
public final class EventLog: Sendable {
    private let handle: NIOLockedValueBox<FileHandle>
    private let now: @Sendable () -> Date

    /// Appends to the file at `path` (created if needed).
    public init(path: String, now: @escaping @Sendable () -> Date = { Date() }) throws {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CacheError.io("cannot create event log \(path)")
            }
        }
        guard let file = FileHandle(forWritingAtPath: path) else {
            throw CacheError.io("cannot open event log \(path) for writing")
        }
        file.seekToEndOfFile()
        handle = NIOLockedValueBox(file)
        self.now = now
    }

    /// Writes one event; `fields` hold strings, numbers, booleans or nil.
    public func emit(_ event: String, _ fields: [String: Any]) {
        var object: [String: Any] = ["event": event, "time": now().timeIntervalSince1970]
        for (name, value) in fields {
            if case Optional<Any>.none = value { continue }
            object[name] = value
        }
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        handle.withLockedValue { file in
            file.write(data)
            file.write(Data("\n".utf8))
        }
    }
}
