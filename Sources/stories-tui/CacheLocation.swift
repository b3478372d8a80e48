import Foundation
import MediaCache

/// Where this program keeps its cache: `--cache-dir`, else `$STORIES_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/stories-tui`, else `~/.cache/stories-tui`.
enum CacheLocation {
    /// Resolves the cache directory from an explicit flag value and the environment.
    static func resolve(explicit: String?, environment: [String: String] = CLIEnvironment.variables) -> URL {
        if let explicit, !explicit.isEmpty { return URL(fileURLWithPath: expandTilde(explicit, environment)) }
        if let dir = environment["STORIES_CACHE_DIR"], !dir.isEmpty {
            return URL(fileURLWithPath: expandTilde(dir, environment))
        }
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: expandTilde(xdg, environment)).appendingPathComponent("stories-tui")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".cache").appendingPathComponent("stories-tui")
    }

    private static func expandTilde(_ path: String, _ environment: [String: String]) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + path.dropFirst()
    }

    /// A failure to open the cache, in this program's words (the library's say what happened; these add which
    /// option to change).
    static func describe(_ error: any Error) -> String {
        guard let cacheError = error as? CacheError else { return "\(error)" }
        return "\(cacheError)".replacingOccurrences(of: "use a different cache directory", with: "pass a different --cache-dir")
    }
}

/// The loader settings every command uses: the library's defaults, introduced to origins as this program.
enum LoaderDefaults {
    /// The `User-Agent` origins see.
    static let userAgent = "stories-tui MediaCache"

    /// The library's defaults with this program's `User-Agent`.
    static var configuration: LoaderConfiguration {
        var configuration = LoaderConfiguration()
        configuration.client.userAgent = userAgent
        return configuration
    }
}
