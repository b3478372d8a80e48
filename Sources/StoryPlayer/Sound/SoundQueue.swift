import Foundation
import NIOConcurrencyHelpers

/// A story's decoded sound, in order, as the decoder made it: runs of interleaved frames, each placed on the
/// story's timeline by its decoded timestamp (never by counting from 0: an HLS story's segments start near 1.4 s and
/// AAC and Opus begin with priming samples the decoder leaves out). The decoder appends; the sound output reads at
/// a cursor. Positions are frame numbers at the output's rate, so no drift builds up between runs. The decoder is
/// asked for more by the reads themselves, so sound never waits on the player's ticks.
public final class SoundQueue: Sendable {
    struct Run {
        var start: Int64
        var samples: [Int16]
    }

    struct State {
        var runs: [Run] = []
        var ended = false
        /// Where the last read left its cursor: the next frame the device will be given.
        var readEnd: Int64?
    }

    /// The queue's format.
    public let format: SoundFormat
    private let state = NIOLockedValueBox(State())
    /// Told, outside the lock, when a read leaves less than `lowWater` seconds decoded after its cursor.
    private let onLow: (@Sendable () -> Void)?
    private let lowWater: Double

    /// An empty queue; `onLow` is told when a read leaves less than `lowWater` seconds decoded after its cursor
    /// (and the sound has not ended): the decoder's cue to decode more.
    public init(format: SoundFormat, lowWater: Double = 0.3, onLow: (@Sendable () -> Void)? = nil) {
        self.format = format
        self.lowWater = lowWater
        self.onLow = onLow
    }

    /// Gaps and overlaps up to this many seconds between runs are timestamp rounding, not missing sound: the run is
    /// placed right after the one before it, so nothing clicks.
    static let seamTolerance = 0.03

    /// The frame number of `seconds` on the story's timeline.
    public func frame(at seconds: Double) -> Int64 { Int64((seconds * Double(format.rate)).rounded()) }

    /// The time of frame number `frame`.
    public func seconds(at frame: Int64) -> Double { Double(frame) / Double(format.rate) }

    /// Adds decoded frames starting at `seconds`.
    public func append(at seconds: Double, samples: [Int16]) {
        guard !samples.isEmpty else { return }
        var start = frame(at: seconds)
        state.withLockedValue { s in
            if let last = s.runs.last {
                let end = last.start + Int64(last.samples.count / format.channels)
                if abs(start - end) <= frame(at: Self.seamTolerance) { start = end }
            }
            s.runs.append(Run(start: start, samples: samples))
            s.ended = false
        }
    }

    /// No more sound comes (the end of the stream, until a seek).
    public func markEnded() { state.withLockedValue { $0.ended = true } }

    /// Drops everything (a seek: the decoder starts again elsewhere).
    public func reset() { state.withLockedValue { $0 = State() } }

    /// The time the last decoded run ends at, nil when none is queued.
    public var decodedThrough: Double? {
        state.withLockedValue { s in
            s.runs.last.map { seconds(at: $0.start + Int64($0.samples.count / format.channels)) }
        }
    }

    /// The time the next frame read starts at (what the device was given up to), nil before the first read.
    public var readThrough: Double? { state.withLockedValue { s in s.readEnd.map { seconds(at: $0) } } }

    /// True once the decoder reached the end of the sound.
    public var isEnded: Bool { state.withLockedValue { $0.ended } }

    /// Forgets sound before `seconds` (played, or passed by the playhead).
    public func trim(before seconds: Double) {
        let position = frame(at: seconds)
        state.withLockedValue { s in
            s.runs.removeAll { $0.start + Int64($0.samples.count / format.channels) <= position }
        }
    }

    /// What reading at a cursor found.
    public enum Read: Equatable {
        /// `frames` frames of sound were copied, from the cursor on (gaps in the stream filled with silence).
        case sound(frames: Int)
        /// Nothing is decoded at the cursor yet.
        case waiting
        /// The sound is over at the cursor.
        case ended
    }

    /// Copies up to `into.count / channels` frames from frame number `cursor` on and moves the cursor past them.
    public func read(at cursor: inout Int64, into buffer: UnsafeMutableBufferPointer<Int16>) -> Read {
        let channels = format.channels
        let wanted = buffer.count / channels
        let lowFrames = frame(at: lowWater)
        let (read, low) = state.withLockedValue { s -> (Read, Bool) in
            defer {
                s.readEnd = cursor
            }
            let decodedEnd = s.runs.last.map { $0.start + Int64($0.samples.count / channels) }
            var filled = 0
            for run in s.runs {
                let frames = run.samples.count / channels
                let runEnd = run.start + Int64(frames)
                guard runEnd > cursor else { continue }
                if run.start > cursor {
                    // A real gap in the stream (or sound that starts after the picture): silence up to the next
                    // run, as a player does.
                    let gap = Int(Swift.min(Int64(wanted - filled), run.start - cursor))
                    for i in 0..<(gap * channels) { buffer[filled * channels + i] = 0 }
                    filled += gap
                    cursor += Int64(gap)
                    if filled == wanted { break }
                }
                let offset = Int(cursor - run.start)
                let count = Swift.min(frames - offset, wanted - filled)
                run.samples.withUnsafeBufferPointer { source in
                    for i in 0..<(count * channels) {
                        buffer[filled * channels + i] = source[offset * channels + i]
                    }
                }
                filled += count
                cursor += Int64(count)
                if filled == wanted { break }
            }
            let low = !s.ended && (decodedEnd ?? cursor) - cursor < lowFrames
            if filled > 0 { return (.sound(frames: filled), low) }
            return (s.ended ? .ended : .waiting, low)
        }
        if low { onLow?() }
        return read
    }
}
