import ArgumentParser
import Foundation
import MediaCache
import StoryPlayer
import StoriesUI

/// `stories-tui cache stats|ls|clear`.
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache", abstract: "Inspect or clear the media cache.",
        subcommands: [Stats.self, List.self, Clear.self])

    /// `cache stats [--json]`.
    struct Stats: AsyncParsableCommand {
        // Named here: a name worked out from the type's name costs every command's start-up a reflection pass.
        static let configuration = CommandConfiguration(
            commandName: "stats",
            abstract: "Show entry count, bytes stored and cumulative origin and cache-hit bytes.")
        @OptionGroup var cache: CacheDirOption
        @Flag(help: "Print one JSON object.") var json = false

        /// Which budget limits the cache now, in words.
        static func binding(_ stats: CacheStats) -> String {
            let room = ByteFormat.string(stats.roomBytes)
            switch stats.binding {
            case "disk":
                return "the disk's free-space floor: room for \(room) more"
                    + " (\(ByteFormat.string(stats.freeDiskBytes ?? 0)) free, \(ByteFormat.string(stats.minimumFreeDiskBytes)) kept free)"
            case "entries":
                return "the entry limit (\(stats.entries) of \(stats.maxEntries.map(String.init) ?? "-") entries)"
            default:
                return "the size budget: room for \(room) more"
            }
        }

        func run() async throws {
            try await reportingFailures {
                // Looking must not create anything: a cache that does not exist yet is an empty one.
                let store = cache.exists ? try cache.openStore(readOnly: true) : nil
                let budgets = try Budgets.resolve()
                let stats = try store?.stats()
                    ?? CacheStats.empty(directory: cache.url, configuration: budgets.configuration)
                if json {
                    print(try JSONOutput.encode(stats))
                } else {
                    let served = stats.originBytes + stats.cacheHitBytes
                    let ratio = served > 0 ? Double(stats.cacheHitBytes) / Double(served) * 100 : 0
                    print("cache directory  \(stats.directory)")
                    print("entries          \(stats.entries) (\(stats.completeEntries) complete)")
                    print("stored           \(ByteFormat.string(stats.storedBytes))"
                        + " (partial \(ByteFormat.string(stats.partialBytes)) of \(ByteFormat.string(stats.partialByteLimit)),"
                        + " complete \(ByteFormat.string(stats.completeBytes)) of \(ByteFormat.string(stats.completeByteLimit)))")
                    print("origin bytes     \(ByteFormat.string(stats.originBytes))")
                    print("bytes saved      \(ByteFormat.string(stats.cacheHitBytes))")
                    print("hit ratio        \(String(format: "%.1f", ratio))% (saved / (saved + origin))")
                    print("budgets          max size \(ByteFormat.string(stats.partialByteLimit + stats.completeByteLimit))"
                        + " [\(budgets.sources[.maxSize] ?? "default")],"
                        + " max age \(AgeFormat.string(stats.completeMaxAge)) [\(budgets.sources[.maxAge] ?? "default")],"
                        + " max entries \(stats.maxEntries.map(String.init) ?? "none") [\(budgets.sources[.maxEntries] ?? "default")],"
                        + " min free \(ByteFormat.string(stats.minimumFreeDiskBytes))"
                        + (budgets.sources[.minFree] == nil && stats.diskBytes != nil
                            && stats.minimumFreeDiskBytes < budgets.configuration.minimumFreeDiskBytes
                            ? " (\(Int((budgets.configuration.minimumFreeDiskShare ?? 0) * 100))% of a \(ByteFormat.string(stats.diskBytes ?? 0)) disk)" : "")
                        + " [\(budgets.sources[.minFree] ?? "default")]")
                    print("binding          \(Self.binding(stats))")
                }
                try store?.close()
            }
        }
    }

    /// `cache ls [--json]`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "ls", abstract: "List cached resources.")
        @OptionGroup var cache: CacheDirOption
        @Flag(help: "Print a JSON array.") var json = false

        func run() async throws {
            try await reportingFailures {
                guard cache.exists else {
                    print(json ? "[]" : "the cache is empty (\(cache.url.path))")
                    return
                }
                let store = try cache.openStore(readOnly: true)
                let plays = try cache.openPlayCounts(beside: store, create: false)?.countsByResource() ?? [:]
                let rows = store.allResources().map { ListedResource(info: $0, playCount: plays[$0.key] ?? 0, file: store.path(for: $0)) }
                if json {
                    print(try JSONOutput.encode(rows))
                } else if rows.isEmpty {
                    print("the cache is empty (\(store.directory.path))")
                } else {
                    for row in rows {
                        let length = row.contentLength.map(ByteFormat.string) ?? "?"
                        let percent = row.contentLength.map { $0 > 0 ? row.cachedBytes * 100 / $0 : 100 } ?? 0
                        let state = row.complete ? "complete" : "partial \(percent)%"
                        print("\(row.shown)\n    \(ByteFormat.string(row.cachedBytes)) of \(length), \(state), plays \(row.playCount), ranges \(row.rangesText)")
                    }
                }
                try store.close()
            }
        }
    }

    /// `cache clear [URL]`.
    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear",
            abstract: "Remove one resource (by its URL, or a local file's path) or everything, play counts and seen stories included.")
        @OptionGroup var cache: CacheDirOption
        @Argument(help: "The URL of the resource to remove, or the path of a local file played over a simulated link; omit to clear everything.")
        var url: String?
        @Flag(help: "Clear everything without asking (asked only when stdin is a terminal).") var yes = false
        @Flag(help: "Forget only which stories were seen and how often (the cached videos stay).") var seen = false

        func run() async throws {
            try await reportingFailures {
                if seen {
                    guard url == nil else {
                        throw CLIFailure(message: "cache clear: --seen clears every story's seen state (give no URL)", exitCode: 2)
                    }
                    let store = try cache.openStore(readOnly: true)
                    defer { try? store.close() }
                    let counts = cache.openPlayCounts(beside: store, create: false)
                    let stories = (try? counts?.counts().count) ?? 0
                    try counts?.removeAll()
                    print("forgot \(stories) stor\(stories == 1 ? "y" : "ies") seen; the cached videos stay")
                    return
                }
                let store = try cache.openStore()
                if let path = url.flatMap(Self.localPath) {
                    // A file played over a simulated link is cached under its path, whatever port served it.
                    let removed = try store.remove(key: StorySession.localKey(path))
                    print(removed ? "removed \(path)" : "not cached: \(path)")
                } else if let parsed = try url.map({ try CLIURL.parse($0, context: "cache clear") }) {
                    let removed = try store.remove(key: CacheKey(url: parsed, rule: try FollowSettings.read().keyRule))
                    let shown = OriginURL.withoutCredentials(parsed).absoluteString
                    print(removed ? "removed \(shown)" : "not cached: \(shown)")
                } else {
                    let count = store.allResources().count
                    if !yes, isatty(STDIN_FILENO) == 1, count > 0 {
                        let size = ByteFormat.string(store.storedBytes)
                        let question = "remove all \(count) cached resource\(count == 1 ? "" : "s") (\(size)) and every "
                            + "play count? [y/N] (--yes skips this question) "
                        try? StandardStreams.write(Array(question.utf8), to: STDOUT_FILENO)
                        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
                        guard answer == "y" || answer == "yes" else {
                            try store.close()
                            throw CLIFailure(message: "cache clear: nothing removed", exitCode: 1)
                        }
                    }
                    try store.removeAll()
                    try cache.openPlayCounts(beside: store, create: false)?.removeAll()
                    print("removed \(count) cached resource\(count == 1 ? "" : "s")")
                }
                try store.close()
                store.waitForTrash()
            }
        }

        /// `text` as a local file's absolute, standardized path when it names one (a `file:` URL, a path, or a
        /// file that exists); nil for anything else.
        static func localPath(_ text: String) -> String? {
            if let url = URL(string: text), url.isFileURL { return url.standardizedFileURL.path }
            let isPath = text.hasPrefix("/") || text.hasPrefix("./") || text.hasPrefix("../") || text.hasPrefix("~")
            guard isPath || (!text.contains("://") && FileManager.default.fileExists(atPath: text)) else { return nil }
            let expanded = (text as NSString).expandingTildeInPath
            return URL(fileURLWithPath: expanded).standardizedFileURL.path
        }
    }
}

/// One row of `cache ls --json`.
struct ListedResource: Codable {
    var url: String
    var key: String
    var contentLength: Int64?
    var contentType: String?
    var cachedBytes: Int64
    var complete: Bool
    var ranges: [[Int64]]
    var etag: String?
    var lastModified: String?
    var lastAccess: String
    var playCount: Int
    /// The data file holding the cached bytes.
    var file: String

    init(info: ResourceInfo, playCount: Int, file: String) {
        url = info.metadata.url
        key = info.key.hex
        contentLength = info.metadata.contentLength
        contentType = info.metadata.contentType
        cachedBytes = info.cachedBytes
        complete = info.isComplete
        ranges = info.ranges.pairs
        etag = info.metadata.etag
        lastModified = info.metadata.lastModified
        lastAccess = ISO8601DateFormatter().string(from: info.lastAccess)
        self.playCount = playCount
        self.file = file
    }

    /// The name a person knows it by: a file on this machine by its path, anything else by its URL.
    var shown: String {
        guard url.hasPrefix("file://"), let file = URL(string: url), file.isFileURL else { return url }
        return file.path
    }

    var rangesText: String { ranges.isEmpty ? "none" : ranges.map { "\($0[0])-\($0[1] - 1)" }.joined(separator: ",") }
}

/// JSON encoding for command output: sorted keys, one line.
enum JSONOutput {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
