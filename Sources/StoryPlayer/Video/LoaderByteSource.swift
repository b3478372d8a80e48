import Dispatch
import Foundation
import MediaCache
import NIOConcurrencyHelpers

/// A video's bytes for a blocking reader (the decoder's thread), read only through `MediaLoader`: one data request
/// from the read position towards the end, as AVPlayer's resource loader makes, kept open while reads follow it and
/// replaced by a new one when the reader jumps (a seek, or the demuxer looking for a header at the end). Bytes are
/// delivered as the loader yields them, so cached bytes come from disk and missing ones are fetched once, shared
/// with every other reader of the same resource.
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
    /// Bytes handed to the reader.
    private(set) var bytesRead: Int64 = 0

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
                bytesRead += Int64(count)
                return count
            }
            if let copied { return copied }
            try fetchChunk(at: offset)
        }
    }

    /// Loads the chunk holding `offset`, continuing the open request when it is there or close behind it, else
    /// opening a new one there.
    private func fetchChunk(at offset: Int64) throws {
        let iterator = lock.withLock { () -> LoadingStream.Iterator in
            // Continue the open request when the reader moves forward by less than what skipping costs.
            if let open = self.iterator, offset >= iteratorOffset, offset - iteratorOffset <= Self.skipLimit {
                return open
            }
            let opened = loader.load(
                LoadingRequest(url: url, cacheKey: key, requestedOffset: offset, requestedLength: length - offset)
            ).makeAsyncIterator()
            self.iterator = opened
            iteratorOffset = offset
            return opened
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = NIOLockedValueBox<Result<LoadedChunk?, Error>>(.success(nil))
        let task = Task {
            do {
                let next = try await iterator.next()
                outcome.withLockedValue { $0 = .success(next) }
            } catch {
                outcome.withLockedValue { $0 = .failure(error) }
            }
            done.signal()
        }
        let proceed = lock.withLock { () -> Bool in
            pending = task
            return !cancelled
        }
        if !proceed { task.cancel() }
        done.wait()
        let next = try outcome.withLockedValue { try $0.get() }
        try lock.withLock {
            pending = nil
            if cancelled { throw CancellationError() }
            guard let next, !next.bytes.isEmpty else {
                self.iterator = nil
                throw PlayerError("the video ended early, at byte \(iteratorOffset) of \(length)")
            }
            chunk = next.bytes
            chunkOffset = next.offset
            iteratorOffset = next.offset + Int64(next.bytes.count)
        }
    }

    /// Forward jumps shorter than this read through the open request rather than opening a new one.
    static let skipLimit: Int64 = 256 * 1024
}
