import Foundation
import HTTPSemantics

/// A `file:` URL read straight from disk: what a player asks of a video on this machine, answered without the
/// store (nothing is copied into the cache) and without an origin. Used by `MediaLoader` for `file:` URLs.
struct LocalFile: Sendable {
    /// The file's path.
    let path: String

    /// The file of `url`, nil for other schemes.
    init?(_ url: URL) {
        guard url.isFileURL else { return nil }
        path = url.path
    }

    /// Length, type and modification time (as Last-Modified).
    func information() throws(LocalFileError) -> ContentInformation {
        var info = stat()
        guard stat(path, &info) == 0 else { throw LocalFileError(path: path, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw LocalFileError(path: path, reason: "is not a file") }
        let modified = Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec))
        return ContentInformation(
            contentLength: Int64(info.st_size), contentType: nil, isByteRangeAccessSupported: true, etag: nil,
            lastModified: HTTPDate.format(modified))
    }

    /// Opens the file for reading; the caller closes the descriptor.
    func open() throws(LocalFileError) -> (descriptor: Int32, length: Int64) {
        let descriptor = Foundation.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw LocalFileError(path: path, errno: errno) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            close(descriptor)
            throw LocalFileError(path: path, errno: code)
        }
        return (descriptor, Int64(info.st_size))
    }

    /// Up to `count` bytes at `offset` of the open `descriptor` (fewer at the end of the file).
    static func read(_ descriptor: Int32, at offset: Int64, count: Int, path: String) throws(LocalFileError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
            }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw LocalFileError(path: path, errno: errno) }
            if got == 0 { break }
            filled += got
        }
        bytes.removeSubrange(filled...)
        return bytes
    }
}

/// A file on this machine that cannot be read, as a sentence.
public struct LocalFileError: Error, CustomStringConvertible, Sendable {
    /// The file.
    public let path: String
    /// What is wrong.
    public let reason: String

    init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    init(path: String, errno code: Int32) {
        self.path = path
        switch code {
        case ENOENT: reason = "no longer exists"
        case EACCES, EPERM: reason = "cannot be read (check its permissions)"
        case EISDIR: reason = "is a folder"
        default: reason = "cannot be read (\(String(cString: strerror(code))))"
        }
    }

    public var description: String { "\(path): \(reason)" }
}
