import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the cache lives: `--cache-dir`, else `$STORIES_CACHE_DIR`, else `$XDG_CACHE_HOME/stories-tui`,
/// else `~/.cache/stories-tui`.
public enum CacheDirectory {
    /// Resolves the cache directory from an explicit flag value and the environment.
    public static func resolve(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment)
        -> URL
    {
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

    /// Creates `url` (and parents) if needed; the directory itself gets mode 0700. Returns the permission bits of
    /// a directory that already existed, nil when it was created now.
    @discardableResult
    public static func create(_ url: URL) throws(CacheError) -> mode_t? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .io("cache directory \(url.path) is a file (pass --cache-dir with a directory)")
            }
            var info = stat()
            return stat(url.path, &info) == 0 ? info.st_mode & 0o777 : nil
        }
        do {
            try FileManager.default.createDirectory(
                at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            chmod(url.path, 0o700)
            return nil
        } catch {
            throw .io("cannot create cache directory \(url.path): \(error.localizedDescription)")
        }
    }
}
