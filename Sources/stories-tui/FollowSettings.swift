import Following
import Foundation
import MediaCache
import StoryPlayer

/// The following settings of the config file (`since`, `ytdlPath`, `ytdlFormat`, `cacheKeyIgnores`) and where
/// the list of followed sources is kept.
struct FollowSettings {
    /// The config file's keys read here (the budgets read the rest).
    static let keys: Set<String> = ["since", "ytdlPath", "ytdlFormat", "cacheKeyIgnores"]

    /// How far back stories go (nil: all).
    var since: TimeInterval? = SinceOption.defaultSeconds
    /// yt-dlp as configured (nil: on PATH).
    var ytdlPath: String?
    /// yt-dlp's format selector (nil: the default).
    var ytdlFormat: String?
    /// Query parameters left out of cache keys beyond the standard ones.
    var keyIgnores: [String] = []

    /// The resolver these settings choose.
    var pageResolver: PageResolver { PageResolver(program: ytdlPath, format: ytdlFormat) }

    /// The cache key rule these settings choose.
    var keyRule: CacheKeyRule { CacheKeyRule.standard.ignoring(keyIgnores) }

    /// Reads the config file (a missing one gives the defaults); `since` from the command line wins.
    static func read(since flag: String? = nil, environment: [String: String] = CLIEnvironment.variables)
        throws(CLIFailure) -> FollowSettings
    {
        let path = Budgets.configFile(environment: environment)
        var settings = FollowSettings()
        var object: [String: Any] = [:]
        if let data = FileManager.default.contents(atPath: path) {
            guard let read = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw CLIFailure(message: "\(path): is not a JSON object (see README: Budgets)", exitCode: 2)
            }
            object = read
        }
        func text(_ key: String) throws(CLIFailure) -> String? {
            guard let value = object[key] else { return nil }
            guard let string = value as? String, !string.isEmpty else {
                throw CLIFailure(message: "\(path): \(key): must be a non-empty string", exitCode: 2)
            }
            return string
        }
        let configured = try text("since")
        if let since = flag ?? configured {
            do {
                settings.since = try SinceOption.parse(since)
            } catch {
                throw CLIFailure(message: "\(flag != nil ? "--since" : "\(path): since"): \(error.message)", exitCode: 2)
            }
        }
        settings.ytdlPath = try text("ytdlPath")
        settings.ytdlFormat = try text("ytdlFormat")
        if let value = object["cacheKeyIgnores"] {
            guard let names = value as? [String], names.allSatisfy({ !$0.isEmpty }) else {
                throw CLIFailure(message: "\(path): cacheKeyIgnores: must be a list of parameter names", exitCode: 2)
            }
            settings.keyIgnores = names
        }
        return settings
    }

    /// Where the followed sources are kept: `following.opml` beside the config file.
    static func listFile(environment: [String: String] = CLIEnvironment.variables) -> String {
        URL(fileURLWithPath: Budgets.configFile(environment: environment)).deletingLastPathComponent()
            .appendingPathComponent(FollowList.fileName).path
    }

    /// The list of followed sources, or one sentence and exit code 2 when it cannot be read.
    static func loadList() throws(CLIFailure) -> FollowList {
        do {
            return try FollowList.load(path: listFile())
        } catch {
            throw CLIFailure(message: error.message, exitCode: 2)
        }
    }

    /// Saves the list, or one sentence and exit code 1.
    static func save(_ list: FollowList) throws(CLIFailure) {
        do {
            try list.save(path: listFile())
        } catch {
            throw CLIFailure(message: error.message, exitCode: 1)
        }
    }
}
