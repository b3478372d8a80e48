import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Locks several processes sharing one cache directory take on byte ranges of its `lock` file: while a process
/// fetches part of a resource it holds a write lock on that part of the resource's slot (so another process waits
/// for those bytes instead of downloading them too, and never writes them at the same time), and while it plays or
/// preloads a resource it holds a read lock on the slot's last byte (so another process's eviction passes it by).
///
/// Linux's open-file-description locks belong to the descriptor, not the process: two stores open in one process
/// exclude each other as two processes do, and the kernel drops a process's locks when it dies. Elsewhere the
/// classic per-process locks are used (one store per process).
final class SharedLocks: Sendable {
    /// The lock file's descriptor, or -1 when there is none (a read-only directory: no writers to coordinate) or
    /// after `close`.
    private let box: NIOLockedValueBox<Int32>
    private var descriptor: Int32 { box.withLockedValue { $0 } }
    /// Run once before the next `lockForFetching` (tests: another process acting between a plan and its lock).
    let beforeNextFetchLock = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    /// Resources get slots of 2^40 bytes (a terabyte of ranges each) at an offset taken from their key; two keys
    /// sharing a slot only wait for each other more than they need to.
    static let slotBits: Int64 = 40
    static let slotCount: UInt64 = 1 << 22

    #if os(Linux)
    // <fcntl.h> defines these only with _GNU_SOURCE, which Swift's Glibc module does not set (values since 3.15).
    private static let ofdGetLock: Int32 = 36
    private static let ofdSetLock: Int32 = 37
    #endif

    init(descriptor: Int32) { box = NIOLockedValueBox(descriptor) }

    /// Runs `body` with the descriptor (-1 when closed) under the box's lock, so it is never closed meanwhile.
    func withDescriptor<T>(_ body: (Int32) -> T) -> T { box.withLockedValue { body($0) } }

    /// Closes the lock file: every lock this store held is released.
    func close() {
        box.withLockedValue { fd in
            if fd >= 0 { SystemCalls.closeDescriptor(fd) }
            fd = -1
        }
    }

    private static func base(of key: CacheKey) -> Int64 {
        let prefix = key.hex.utf8.prefix(12).reduce(UInt64(0)) { value, digit in
            value &* 16 &+ UInt64(digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10)
        }
        return Int64(prefix % slotCount) << slotBits
    }

    /// The part of a slot ranges use (the last byte is the pin byte).
    static let rangeLimit: Int64 = (1 << slotBits) - 1

    /// Tries to lock `range` of `key` for fetching. Returns the range locked — `range` itself, or its beginning
    /// up to where another process's lock starts — or nil when another process holds the bytes at its start.
    func lockForFetching(_ key: CacheKey, _ range: ByteRange) -> ByteRange? {
        if let hook = beforeNextFetchLock.withLockedValue({ hook in defer { hook = nil }; return hook }) { hook() }
        guard descriptor >= 0 else { return range }
        var wanted = Swift.max(0, range.lowerBound)..<Swift.min(range.upperBound, Self.rangeLimit)
        guard !wanted.isEmpty else { return range }
        let base = Self.base(of: key)
        for _ in 0..<16 {
            if set(F_WRLCK, start: base + wanted.lowerBound, length: Int64(wanted.count)) {
                return wanted
            }
            guard let conflict = conflicting(start: base + wanted.lowerBound, length: Int64(wanted.count)) else {
                continue  // released meanwhile: try again
            }
            let start = conflict.start - base
            if start <= wanted.lowerBound { return nil }
            wanted = wanted.lowerBound..<start
        }
        return nil
    }

    /// The byte past every resource slot, held for writing while a store creates or migrates the index.
    static let schemaByte = Int64(slotCount) << slotBits

    /// Runs `body` holding the schema lock, waiting up to `limit` for another store (process) that holds it: only
    /// one at a time creates or migrates the index, the others then find it made. SQLite alone does not order
    /// them: each reads "no tables yet" before any of them has created one.
    func whileHoldingSchemaLock<T>(waitingAtMost limit: Duration = .seconds(60), _ body: () throws -> T) rethrows -> T {
        guard descriptor >= 0 else { return try body() }
        let deadline = ContinuousClock.now + limit
        // (A holder stuck past the limit only brings back the race the lock prevents: the open may then fail.)
        var locked = set(F_WRLCK, start: Self.schemaByte, length: 1)
        while !locked, ContinuousClock.now < deadline {
            usleep(2_000)
            locked = set(F_WRLCK, start: Self.schemaByte, length: 1)
        }
        defer { if locked { _ = set(F_UNLCK, start: Self.schemaByte, length: 1) } }
        return try body()
    }

    /// Releases a range `lockForFetching` locked.
    func unlock(_ key: CacheKey, _ range: ByteRange) {
        guard descriptor >= 0, !range.isEmpty else { return }
        _ = set(F_UNLCK, start: Self.base(of: key) + range.lowerBound, length: Int64(range.count))
    }

    /// Marks `key` as in use by this store (its first pin) or no longer (its last unpin).
    func setPinned(_ key: CacheKey, _ pinned: Bool) {
        guard descriptor >= 0 else { return }
        _ = set(pinned ? F_RDLCK : F_UNLCK, start: Self.base(of: key) + Self.rangeLimit, length: 1)
    }

    /// True when another store (another process) has `key` pinned.
    func isPinnedElsewhere(_ key: CacheKey) -> Bool {
        guard descriptor >= 0 else { return false }
        return conflicting(start: Self.base(of: key) + Self.rangeLimit, length: 1) != nil
    }

    /// A lock description of `type` over `length` bytes at `start`.
    private static func span(_ type: Int32, start: Int64, length: Int64) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(start)
        lock.l_len = off_t(length)
        return lock
    }

    /// Takes (or with `F_UNLCK` releases) a lock without waiting; false when another holder's lock conflicts.
    private func set(_ type: Int32, start: Int64, length: Int64) -> Bool {
        var lock = Self.span(type, start: start, length: length)
        #if os(Linux)
        let command = Self.ofdSetLock
        #else
        let command = F_SETLK
        #endif
        return fcntl(descriptor, command, &lock) == 0
    }

    /// The lock another holder has that conflicts with a write lock on the span, if any.
    private func conflicting(start: Int64, length: Int64) -> (start: Int64, length: Int64)? {
        var lock = Self.span(F_WRLCK, start: start, length: length)
        #if os(Linux)
        let command = Self.ofdGetLock
        #else
        let command = F_GETLK
        #endif
        guard fcntl(descriptor, command, &lock) == 0, lock.l_type != Int16(F_UNLCK) else { return nil }
        return (Int64(lock.l_start), Int64(lock.l_len))
    }
}
