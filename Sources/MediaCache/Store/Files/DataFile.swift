import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A sparse data file accessed with positional reads and writes. The descriptor is fixed for the object's life and
/// closed when the last reference goes, so a commit may sync it outside the store's lock while the store drops it.
final class DataFile: Sendable {
    let path: String
    let descriptor: Int32

    /// Opens the file at `path` for reading and writing, or only for reading; `create` makes a new file, failing
    /// when one is there. A missing file throws `.notFound` (another process evicted or refiled it).
    init(path: String, readOnly: Bool = false, create: Bool = false) throws(CacheError) {
        self.path = path
        let flags = readOnly ? O_RDONLY : O_RDWR
        let fd = create ? open(path, flags | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) : open(path, flags | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw .io("\(path) is gone (another process evicted or moved it)") }
            throw .io("cannot open \(path): \(DataFile.errnoText())")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Writes all of `bytes` at `offset`, retrying short writes and EINTR.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = pwrite(descriptor, base + done, bytes.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                throw .io("cannot write \(path): \(DataFile.errnoText())")
            }
            done += n
        }
    }

    /// Reads exactly `count` bytes at `offset`; a short file is an error (the caller only reads recorded ranges).
    func read(count: Int, at offset: Int64) throws(CacheError) -> [UInt8] {
        var failure: CacheError?
        // Not zeroed first: every byte is read into it, or the array is not returned.
        let result = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            defer { initialized = failure == nil ? done : 0 }
            guard let base = buffer.baseAddress else { return }
            while done < count {
                let n = pread(descriptor, base + done, count - done, off_t(offset + Int64(done)))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .io("cannot read \(path): \(DataFile.errnoText())")
                    return
                }
                if n == 0 {
                    failure = .io("\(path) is shorter than its index says (offset \(offset + Int64(done)))")
                    return
                }
                done += n
            }
        }
        if let failure { throw failure }
        return result
    }

    /// Flushes written data to stable storage.
    func sync() throws(CacheError) {
        #if canImport(Glibc)
        let rc = fdatasync(descriptor)
        #else
        let rc = fsync(descriptor)
        #endif
        guard rc == 0 else { throw .io("cannot sync \(path): \(DataFile.errnoText())") }
    }

    /// The file's size in bytes, or nil when there is no regular file at `path` (a directory or link there does
    /// not count as data).
    static func size(atPath path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Bytes available to unprivileged users on the file system holding `path`, or nil when unknown.
    static func freeSpace(atPath path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// The size in bytes of the file system that holds `path` (or, when `path` does not exist yet, its nearest
    /// existing ancestor), or nil when unknown.
    static func diskSize(atPath path: String) -> Int64? {
        var current = path
        while true {
            var info = statvfs()
            if statvfs(current, &info) == 0 { return Int64(info.f_blocks) * Int64(info.f_frsize) }
            let parent = (current as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != current else { return nil }
            current = parent
        }
    }

    /// Renames atomically (same file system).
    static func rename(from source: String, to destination: String) throws(CacheError) {
        guard SystemCalls.renameFile(source, destination) == 0 else {
            throw .io("cannot move \(source) to \(destination): \(errnoText())")
        }
    }

    /// The current errno as text.
    static func errnoText() -> String { String(cString: strerror(errno)) }
}
