import Foundation
import MediaCache

/// The run of bytes a player downloads and its decoder reads, shared by both, known as far as its parts' lengths
/// are: an HLS story learns a segment's length when it gets there (from the cache, or from the first bytes it
/// fetches of it anyway), not all of them before the first frame. Parts are only added at the end, except that an
/// HLS story may move to another variant from a segment on: that part and every later one are replaced together,
/// and only while the decoder is not reading there, so the demuxer never sees a segment of one variant end in
/// bytes of another.
// Sendable: its parts are read and replaced only with `condition` held.
final class MediaRun: @unchecked Sendable {
    /// A part whose length is not known yet.
    struct Pending: Sendable {
        let url: URL
        let key: CacheKey
        /// An `#EXT-X-BYTERANGE`, or nil for the whole resource.
        let byteRange: Range<Int64>?
        /// The media seconds it covers (nil for an initialization section).
        let time: Range<Double>?
        /// How it is encrypted, if it is.
        var encryption: SegmentEncryption? = nil
    }

    /// Guards everything below; the decoder's thread waits on it for the run to grow.
    private let condition = NSCondition()
    private var known: MediaParts
    private var pending: [Pending]
    /// The part the decoder read from last (-1: none yet). Not the furthest: the demuxer may look further on and
    /// come back, and a part it left behind is read afresh when it gets there.
    private var decoderAt = -1
    /// Bumped by every change, so a length learned for a part that was replaced meanwhile is dropped.
    private var version = 0
    /// True while the decoder waits for a part whose length is not known yet.
    private var decoderWaiting = false
    /// Told when the decoder starts waiting for the run to reach further.
    private var onDecoderWaiting: (@Sendable () -> Void)?

    /// A run of `parts`, followed by `pending` parts whose lengths are learned as they are reached.
    init(_ parts: MediaParts, pending: [Pending] = []) {
        known = parts
        self.pending = pending
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    /// The parts whose lengths are known, in order from the start.
    var parts: MediaParts { locked { known } }

    /// True when every part's length is known.
    var isComplete: Bool { locked { pending.isEmpty } }

    /// The whole run for showing it: the parts still pending at the average size per second of the known ones.
    var estimated: MediaParts {
        locked {
            guard !pending.isEmpty, let lengthOf = estimateLocked() else { return known }
            return MediaParts(known.pieces + pending.map { part in
                let length = lengthOf(part)
                return MediaParts.Piece(
                    url: part.url, key: part.key, range: part.byteRange ?? 0..<length,
                    resourceLength: part.byteRange?.upperBound ?? length, time: part.time, encryption: part.encryption)
            })
        }
    }

    /// The length of `estimated`, without building it (the player shows it every tick).
    var estimatedLength: Int64 {
        locked {
            guard !pending.isEmpty, let lengthOf = estimateLocked() else { return known.length }
            return pending.reduce(known.length) { $0 + lengthOf($1) }
        }
    }

    /// How long a pending part is likely to be: its byte range's, or its seconds at the known segments' average
    /// bytes per second; nil before any segment is known.
    private func estimateLocked() -> ((Pending) -> Int64)? {
        var seconds = 0.0
        var bytes: Int64 = 0
        for part in known.parts {
            guard let time = part.time else { continue }
            seconds += time.upperBound - time.lowerBound
            bytes += Int64(part.range.count)
        }
        guard seconds > 0 else { return nil }
        return { part in
            part.byteRange.map { Int64($0.count) }
                ?? Int64(Double(bytes) / seconds * (part.time.map { $0.upperBound - $0.lowerBound } ?? 0))
        }
    }

    /// The parts from `index` on (known or not), as pending parts: what a variant switch would replace.
    func upcoming(from index: Int) -> [Pending] {
        locked {
            let fromKnown = known.parts.dropFirst(index).map { part in
                Pending(
                    url: part.url, key: part.key,
                    byteRange: part.range == 0..<part.resourceLength || part.encryption != nil ? nil : part.range,
                    time: part.time, encryption: part.encryption)
            }
            return fromKnown + pending.dropFirst(Swift.max(0, index - known.parts.count))
        }
    }

    /// True while the decoder waits for the run to reach further (the demuxer may read ahead of the playhead,
    /// e.g. to learn the streams before the first frame): the player then learns the next length for it.
    var decoderIsWaiting: Bool { locked { decoderWaiting } }

    /// Calls `wake` whenever the decoder starts waiting for the run to reach further (the download then learns
    /// the next length for it).
    func whenDecoderWaits(_ wake: @escaping @Sendable () -> Void) { locked { onDecoderWaiting = wake } }

    /// Replaces the parts from `index` on with `parts` (lengths not known yet); false (nothing changed) while the
    /// decoder reads there or further on.
    func replace(from index: Int, with parts: [Pending]) -> Bool {
        locked {
            guard index > decoderAt, index <= known.parts.count + pending.count else { return false }
            let keptPending = Array(pending.prefix(Swift.max(0, index - known.parts.count)))
            if index < known.parts.count { known = MediaParts(Array(known.pieces.prefix(index))) }
            pending = keptPending + parts
            version += 1
            condition.broadcast()
            return true
        }
    }

    /// Learns the length of the first pending part (from the cache, or by fetching its first bytes) and adds
    /// it; false when nothing is pending.
    func resolveNext(loader: MediaLoader) async throws -> Bool {
        guard let (next, seen) = locked({ pending.first.map { ($0, version) } }) else { return false }
        let piece = try await Self.measured(next, loader: loader)
        append([piece], ifUnchangedSince: seen)
        return true
    }

    /// Learns the lengths of the pending parts up to the one playing at `seconds` (in parallel), so the run
    /// reaches it (a seek).
    func resolve(through seconds: Double, loader: MediaLoader) async throws {
        while true {
            let (wanted, seen) = locked { () -> ([Pending], Int) in
                guard known.knownEnd <= seconds, !pending.isEmpty else { return ([], version) }
                let through = pending.firstIndex { ($0.time?.upperBound ?? -.infinity) > seconds } ?? pending.count - 1
                return (Array(pending.prefix(through + 1)), version)
            }
            guard !wanted.isEmpty else { return }
            let pieces = try await withThrowingTaskGroup(of: (Int, MediaParts.Piece).self) { group in
                for (index, part) in wanted.enumerated() {
                    group.addTask { (index, try await Self.measured(part, loader: loader)) }
                }
                var pieces = [MediaParts.Piece?](repeating: nil, count: wanted.count)
                for try await (index, piece) in group { pieces[index] = piece }
                return pieces.compactMap { $0 }
            }
            append(pieces, ifUnchangedSince: seen)
        }
    }

    private func append(_ pieces: [MediaParts.Piece], ifUnchangedSince seen: Int) {
        locked {
            guard version == seen, pieces.count <= pending.count else { return }
            known = MediaParts(known.pieces + pieces)
            pending.removeFirst(pieces.count)
            version += 1
            condition.broadcast()
        }
    }

    /// `part` with its length: its byte range's, the cache's, or the origin's (its first bytes fetched); an
    /// encrypted segment's is its plaintext's (its key fetched, its last block decrypted).
    static func measured(_ part: Pending, loader: MediaLoader) async throws -> MediaParts.Piece {
        let length: Int64
        if let range = part.byteRange {
            length = range.upperBound
        } else if let stored = loader.cached(part.key)?.metadata.contentLength {
            length = stored
        } else {
            guard let learned = try await loader.contentInformation(for: part.url, key: part.key).contentLength else {
                throw PlayerError("the origin did not say how long HLS segment \(part.url.lastPathComponent) is")
            }
            length = learned
        }
        if var encryption = part.encryption {
            if encryption.key == nil { encryption = try await encryption.fetchingKey(loader: loader) }
            let tailStart = Swift.max(0, length - 32)
            let tail = try await loader.data(
                LoadingRequest(url: part.url, cacheKey: part.key, requestedOffset: tailStart, requestedLength: length - tailStart))
            let plain = try encryption.plaintextLength(encrypted: length, tail: tail, segment: part.url)
            return MediaParts.Piece(
                url: part.url, key: part.key, range: 0..<plain, resourceLength: length, time: part.time,
                encryption: encryption)
        }
        let range = part.byteRange ?? 0..<length
        guard range.upperBound <= length else {
            throw PlayerError("an #EXT-X-BYTERANGE of \(part.url.lastPathComponent) goes past its end")
        }
        return MediaParts.Piece(url: part.url, key: part.key, range: range, resourceLength: length, time: part.time)
    }

    /// The part the decoder reads at run offset `offset`, waiting (on the decoder's thread) while the run has
    /// not reached it yet; that part and the ones before it then cannot be replaced until the decoder reads
    /// elsewhere. Nil past the end, or once `stopped` says so.
    func partForDecoder(at offset: Int64, stopped: () -> Bool = { false }) -> MediaParts.Part? {
        locked {
            defer { decoderWaiting = false }
            while true {
                if let index = known.index(containing: offset) {
                    decoderAt = index
                    return known.parts[index]
                }
                if pending.isEmpty || stopped() { return nil }
                if !decoderWaiting { onDecoderWaiting?() }
                decoderWaiting = true
                condition.wait()
            }
        }
    }

    /// Waits (on the decoder's thread) until the run reaches the media at `seconds`, or ends, or `stopped`.
    func waitForTime(_ seconds: Double, stopped: () -> Bool) {
        locked {
            while known.knownEnd <= seconds, !pending.isEmpty, !stopped() { condition.wait() }
        }
    }

    /// Wakes the decoder's waits to look at `stopped` again (the story is over).
    func wakeDecoder() { locked { condition.broadcast() } }
}
