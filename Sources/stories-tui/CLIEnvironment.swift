import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The environment variables the command line reads, looked up once: `ProcessInfo.environment` builds a
/// dictionary of every variable (and ProcessInfo itself) on first use, a tenth of a cached fetch's own work.
enum CLIEnvironment {
    /// Every variable any command reads.
    static let names =
        ["STORIES_CACHE_DIR", "STORIES_LOG_LEVEL", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "HOME"]
        + Budgets.Setting.allCases.map(\.environmentName)

    /// Those of `names` that are set, with their values.
    static let variables: [String: String] = Dictionary(
        names.compactMap { name in getenv(name).map { (name, String(cString: $0)) } },
        uniquingKeysWith: { first, _ in first })
}
