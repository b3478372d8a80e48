import Dispatch
import Foundation
import MediaCache
import NIOConcurrencyHelpers

/// A video's bytes for a blocking reader (the decoder's thread), read only through `MediaLoader`: one data request
/// from the read position towards the end, as AVPlayer's resource loader makes, kept open while reads follow it and
/// replaced by a new one when the reader jumps (a seek, or the demuxer looking for a header at the end). Bytes are
/// delivered as the loader yields them, so cached bytes come from disk and missing ones are fetched once, shared
/// with every other reader of the same resource.
// Sendable: every mutable member is read and written with `lock` held.
final class LoaderByteSource: @unchecked Sendable {
    /// The resource's length.
    let length: Int64
    private let loader: MediaLoader
    private let url: URL
    private let key: CacheKey
    /// Guarded by `lock`: the open request's iterator, the chunk being read and where it starts.
    private let lock = NIOLock()
    private var iterator: LoadingStream.Iterator?
    private var iteratorOffset: Int64 = 0
    private var chunk: [UInt8] = []
    private var chunkOffset: Int64 = 0
    private var pending: Task<Void, Never>?
    private var cancelled = false
    private var delivered: Int64 = 0

    /// Bytes handed to the reader.
    var bytesRead: Int64 { lock.withLock { delivered } }

    /// Reads of `url` (cached under `key`), `length` bytes long.
    init(loader: MediaLoader, url: URL, key: CacheKey, length: Int64) {
        self.loader = loader
        self.url = url
        self.key = key
        self.length = length
    }

    /// Wakes a blocked read with an error and makes every later read fail: the story is over.
    func cancel() {
        let task = lock.withLock { () -> Task<Void, Never>? in
            cancelled = true
            iterator = nil
            return pending
        }
        task?.cancel()
    }

    /// Copies up to `buffer.count` bytes from `offset` into `buffer`, blocking until the loader has them; returns
    /// the count (0 at the end). Throws when the loader fails or the source was cancelled.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset < length, buffer.count > 0 else { return 0 }
        while true {
            let copied = try lock.withLock { () throws -> Int? in
                if cancelled { throw CancellationError() }
                guard offset >= chunkOffset, offset < chunkOffset + Int64(chunk.count) else { return nil }
                let start = Int(offset - chunkOffset)
                let count = Swift.min(buffer.count, chunk.count - start)
                chunk.withUnsafeBytes { source in
                    buffer.baseAddress?.copyMemory(from: source.baseAddress! + start, byteCount: count)
                }
                delivered += Int64(count)
                return count
            }
            if let copied { return copied }
            try fetchChunk(at: offset)
        }
    }

    /// What to read next: more of the open request, a short read behind it, or a new request.
    private enum Plan {
        case continueOpen(LoadingStream.Iterator)
        case readBehind(Range<Int64>)
        case open(LoadingStream.Iterator)
    }

    /// Loads the chunk holding `offset`: the open request continues when the reader is there or a little behind;
    /// bytes behind it (already read once, so cached) come from a short request of their own and leave it open,
    /// as the demuxer often steps back after probing; anything else opens a new request there.
    private func fetchChunk(at offset: Int64) throws {
        let plan = lock.withLock { () -> Plan in
            if let open = self.iterator, offset >= iteratorOffset, offset - iteratorOffset <= Self.skipLimit {
                return .continueOpen(open)
            }
            if self.iterator != nil, offset < iteratorOffset {
                return .readBehind(offset..<Swift.min(iteratorOffset, offset + Self.skipLimit))
            }
            let opened = loader.load(
                LoadingRequest(url: url, cacheKey: key, requestedOffset: offset, requestedLength: length - offset)
            ).makeAsyncIterator()
            self.iterator = opened
            iteratorOffset = offset
            return .open(opened)
        }
        switch plan {
        case .continueOpen(let iterator), .open(let iterator):
            let next = try blocking { try await iterator.next() }
            try lock.withLock {
                if cancelled { throw CancellationError() }
                guard let next, !next.bytes.isEmpty else {
                    self.iterator = nil
                    throw PlayerError("the video ended early, at byte \(iteratorOffset) of \(length)")
                }
                chunk = next.bytes
                chunkOffset = next.offset
                iteratorOffset = next.offset + Int64(next.bytes.count)
            }
        case .readBehind(let range):
            let (loader, url, key) = (self.loader, self.url, self.key)
            let bytes = try blocking {
                try await loader.data(
                    LoadingRequest(url: url, cacheKey: key, requestedOffset: range.lowerBound,
                        requestedLength: Int64(range.count)))
            }
            try lock.withLock {
                if cancelled { throw CancellationError() }
                guard !bytes.isEmpty else { throw PlayerError("the video ended early, at byte \(range.lowerBound)") }
                chunk = bytes
                chunkOffset = range.lowerBound
            }
        }
    }

    /// Runs `work` on the concurrency pool and blocks this (non-pool) thread until it finished; `cancel` wakes it.
    private func blocking<T: Sendable>(_ work: sending @escaping () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let outcome = NIOLockedValueBox<Result<T, Error>?>(nil)
        let task = Task {
            let result: Result<T, Error>
            do {
                result = .success(try await work())
            } catch {
                result = .failure(error)
            }
            outcome.withLockedValue { $0 = result }
            done.signal()
        }
        let proceed = lock.withLock { () -> Bool in
            pending = task
            return !cancelled
        }
        if !proceed { task.cancel() }
        done.wait()
        lock.withLock { pending = nil }
        guard let result = outcome.withLockedValue({ $0 }) else { throw CancellationError() }
        return try result.get()
    }

    /// Forward jumps shorter than this read through the open request rather than opening a new one.
    static let skipLimit: Int64 = 256 * 1024
}

/// What the demuxer reads from: a run of bytes of known length, read by a blocking thread.
protocol DemuxerByteSource: AnyObject, Sendable {
    /// Bytes in the run.
    var length: Int64 { get }
    /// Bytes handed to the reader so far.
    var bytesRead: Int64 { get }
    /// True when the media's duration is known without the demuxer reading the end of the run to estimate it
    /// (an HLS story's playlist says it), so opening reads from the start only.
    var durationIsKnown: Bool { get }
    /// Copies up to `buffer.count` bytes from `offset` on; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int
    /// Wakes a blocked read with an error; later reads fail.
    func cancel()
}

extension LoaderByteSource: DemuxerByteSource {
    var durationIsKnown: Bool { false }
}

/// A run of parts (see `MediaRun`) read through one `LoaderByteSource` a part: a read stops at the end of its
/// part, and the demuxer's next read continues in the next (after a variant switch, in the new variant's segment).
// Sendable: every mutable member is read and written with `lock` held.
final class PartsByteSource: DemuxerByteSource, @unchecked Sendable {
    private let loader: MediaLoader
    private let run: MediaRun
    /// A part's resource and range: the same bytes keep their source (and its open request) across reads.
    private struct PartID: Hashable {
        let key: CacheKey
        let range: Range<Int64>
    }
    private let lock = NIOLock()
    private var sources: [PartID: any DemuxerByteSource] = [:]
    private var cancelled = false

    init(loader: MediaLoader, run: MediaRun) {
        self.loader = loader
        self.run = run
    }

    var length: Int64 { run.parts.length }

    var durationIsKnown: Bool {
        if case .segments = run.parts.timing { return true }
        return false
    }

    /// Bytes handed to the reader, over every part.
    var bytesRead: Int64 { lock.withLock { Array(sources.values) }.reduce(0) { $0 + $1.bytesRead } }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        // Waits while the player has not learned the length of the part there yet.
        guard let part = run.partForDecoder(at: offset, stopped: { isCancelled }) else {
            if isCancelled { throw CancellationError() }
            return 0
        }
        let id = PartID(key: part.key, range: part.range)
        let source = lock.withLock { () -> any DemuxerByteSource in
            if let source = sources[id] { return source }
            let source: any DemuxerByteSource
            if let encryption = part.encryption {
                // Decrypted as it is read; the cipher blocks come through the loader, up to the resource's end.
                source = DecryptingByteSource(
                    encrypted: LoaderByteSource(loader: loader, url: part.url, key: part.key, length: part.resourceLength),
                    encryption: encryption, length: part.range.upperBound)
            } else {
                source = LoaderByteSource(loader: loader, url: part.url, key: part.key, length: part.range.upperBound)
            }
            if cancelled { source.cancel() }
            sources[id] = source
            return source
        }
        let count = Int(Swift.min(Int64(buffer.count), part.end - offset))
        return try source.read(
            into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]),
            at: part.range.lowerBound + (offset - part.start))
    }

    /// True once the story is over.
    var isCancelled: Bool { lock.withLock { cancelled } }

    /// Waits until the run reaches the media at `seconds` (the player learns the lengths up to there).
    func waitForTime(_ seconds: Double) { run.waitForTime(seconds, stopped: { isCancelled }) }

    func cancel() {
        let all = lock.withLock { () -> [any DemuxerByteSource] in
            cancelled = true
            return Array(sources.values)
        }
        for source in all { source.cancel() }
        // A read waiting for the player to learn a part's length sees `isCancelled` now.
        run.wakeDecoder()
    }
}
