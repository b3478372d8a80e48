import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The cache directory on disk: created private to its owner.
enum CacheDirectory {
    /// Creates `url` (and parents) if needed; the directory itself gets mode 0700. Returns the permission bits of
    /// a directory that already existed, nil when it was created now.
    @discardableResult
    static func create(_ url: URL) throws(CacheError) -> mode_t? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .io("cache directory \(url.path) is a file, not a directory (choose a directory for the cache)")
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
