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
            guard let base = buffer.baseAddress else { return }
            failure = readFully(into: base, count: count, at: offset)
            initialized = failure == nil ? count : 0
        }
        if let failure { throw failure }
        return result
    }

    /// Reads exactly `count` bytes at `offset` into one array, the pieces `parts` (which tile `0..<count`) at once,
    /// on as many threads, each followed on its thread by `process(index, bytes)` over that piece's bytes, while
    /// they are still in the processor's cache. A short file is an error.
    func read(
        count: Int, at offset: Int64, in parts: [Range<Int>], process: (Int, UnsafeRawBufferPointer) -> Void
    ) throws(CacheError) -> [UInt8] {
        guard parts.count > 1 else {
            let bytes = try read(count: count, at: offset)
            bytes.withUnsafeBytes { process(0, $0) }
            return bytes
        }
        let failures = UnsafeMutableBufferPointer<CacheError?>.allocate(capacity: parts.count)
        failures.initialize(repeating: nil)
        defer { failures.deallocate() }
        // Not zeroed first: every byte is read into it, or the array is not returned.
        let result = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            withoutActuallyEscaping(process) { process in
                let pieces = DisjointPieces { index in
                    let part = parts[index]
                    failures[index] = self.readFully(
                        into: base + part.lowerBound, count: part.count, at: offset + Int64(part.lowerBound))
                    if failures[index] == nil {
                        process(index, UnsafeRawBufferPointer(start: base + part.lowerBound, count: part.count))
                    }
                }
                DispatchQueue.concurrentPerform(iterations: parts.count) { pieces.read($0) }
            }
            initialized = failures.contains { $0 != nil } ? 0 : count
        }
        if let failure = failures.lazy.compactMap({ $0 }).first { throw failure }
        return result
    }

    /// The reading of the pieces of one array by several threads at once. Sendable: each call writes only its own
    /// piece of the array and its own failure slot, and `concurrentPerform` returns after the last call.
    private struct DisjointPieces: @unchecked Sendable {
        let read: (Int) -> Void
    }

    /// Reads exactly `count` bytes at `offset` into `base`, retrying short reads and EINTR; the error, if any.
    private func readFully(into base: UnsafeMutablePointer<UInt8>, count: Int, at offset: Int64) -> CacheError? {
        var done = 0
        while done < count {
            let n = pread(descriptor, base + done, count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                return .io("cannot read \(path): \(DataFile.errnoText())")
            }
            if n == 0 { return .io("\(path) is shorter than its index says (offset \(offset + Int64(done)))") }
            done += n
        }
        return nil
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
