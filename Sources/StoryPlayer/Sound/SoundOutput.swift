import Foundation

/// Whether stories can be heard, for the screen.
public enum SoundAvailability: Sendable, Equatable {
    /// The device is being opened.
    case opening
    /// Sound goes to the named device ("PulseAudio").
    case ready(String)
    /// No sound: why, in one line.
    case unavailable(String)
}

/// Where a story's sound is, as the player asks each tick.
public enum SoundReading: Sendable, Equatable {
    /// Nothing of it was heard yet (the device is still playing what came before, or nothing is decoded).
    case waiting
    /// The frame being heard now is at this time on the story's timeline: the clock playback follows.
    case playing(Double)
    /// Its sound is over (the stream ended, or the device failed): playback follows the system clock.
    case ended
}

/// The sound device's one thread: it opens the device (off the UI thread: a server that does not answer can take
/// seconds), then writes the attached story's sound from its queue at a cursor, or, when there is none, silence
/// only as the device runs low (`silenceAhead`), so the next story's sound is never queued behind much of it. What
/// it wrote and the device's delay make the audio clock: the time of the frame being heard. Pause, seek, mute, a
/// story change and quitting flush the device, so nothing of before is heard after; every such cut fades out over
/// 5 ms from the frame being heard and every start fades in, so no cut clicks.
// Sendable: its shared state is read and written only with `condition` held; `thread` is set once under it.
public final class SoundOutput: @unchecked Sendable {
    struct Source {
        var id: Int
        var queue: SoundQueue
        var cursor: Int64
        /// Bumped by every `play`: a chunk read before it is not counted.
        var generation: Int
        var clock: (writtenEnd: Int64, delay: Double, at: Double)?
        var starved = false
        /// Frames of it written so far, up to the fade-in's length.
        var fadedIn = 0
    }

    /// Sound cut off: what fades out, from the frame being heard when it was cut.
    struct Fade {
        var queue: SoundQueue
        var frame: Int64
    }

    /// How long a cut fades out and a start fades in.
    static let fadeSeconds = 0.005

    /// With nothing to play, silence is written only while the device holds less than this: what is queued when a
    /// story's sound arrives is heard before it.
    static let silenceAhead = 0.04

    /// The frames a fade lasts at `format`'s rate.
    static func fadeFrames(_ format: SoundFormat) -> Int {
        Swift.max(1, Int((Double(format.rate) * fadeSeconds).rounded()))
    }

    struct Shared {
        var availability = SoundAvailability.opening
        var source: Source?
        var flush = false
        var fade: Fade?
        var closed = false
        var underruns = 0
        var generation = 0
        /// Waiting in `settled()` for the device to open or fail.
        var settledWaiters: [CheckedContinuation<SoundAvailability, Never>] = []
    }

    private let open: @Sendable () throws(SoundError) -> any SoundSink
    private let now: @Sendable () -> Double
    private let condition = NSCondition()
    private var shared = Shared()
    private var thread: Thread?

    /// An output that opens its sink with `open` when started; `now` is the clock the audio clock is read on.
    public init(
        now: @escaping @Sendable () -> Double = SoundOutput.monotonicSeconds,
        open: @escaping @Sendable () throws(SoundError) -> any SoundSink
    ) {
        self.open = open
        self.now = now
    }

    /// An output that will never sound, saying why (`--mute` aside, e.g. when sound was turned off for a run).
    public static func unavailable(_ reason: String) -> SoundOutput {
        let output = SoundOutput { () throws(SoundError) -> any SoundSink in throw SoundError(reason) }
        output.locked { $0.availability = .unavailable(reason) }
        return output
    }

    /// CLOCK_MONOTONIC in seconds: the time line events and outside recorders share.
    public static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Opens the device on the output's own thread and starts writing.
    public func start() {
        let begin = locked { s -> Bool in
            guard self.thread == nil, !s.closed, s.availability == .opening else { return false }
            return true
        }
        guard begin else { return }
        let thread = Thread { [self] in run() }
        thread.name = "stories-tui.sound"
        thread.qualityOfService = .userInteractive
        locked { _ in self.thread = thread }
        thread.start()
    }

    /// Whether sound can be heard.
    public var availability: SoundAvailability { locked { $0.availability } }

    /// Times the attached sound ran out while it played (the decoder fell behind the device).
    public var underruns: Int { locked { $0.underruns } }

    /// Plays `queue` from `seconds` on, as source `id` (a story's player); whatever played before is dropped.
    public func play(_ queue: SoundQueue, from seconds: Double, id: Int) {
        let time = now()
        changing { s in
            s.fade = Self.fadeOut(s.source, at: time) ?? s.fade
            s.generation += 1
            s.source = Source(id: id, queue: queue, cursor: queue.frame(at: seconds), generation: s.generation)
            s.flush = true
        }
    }

    /// Stops source `id` at once (what the device holds of it is dropped); nothing when another source plays.
    public func stop(id: Int) {
        let time = now()
        changing { s in
            guard s.source?.id == id else { return }
            s.fade = Self.fadeOut(s.source, at: time) ?? s.fade
            s.source = nil
            s.generation += 1
            s.flush = true
        }
    }

    /// Where source `id`'s sound is now.
    public func reading(id: Int) -> SoundReading {
        let time = now()
        return locked { s in
            guard let source = s.source, source.id == id else { return .ended }
            if case .unavailable = s.availability { return .ended }
            guard let clock = source.clock else { return source.queue.isEnded ? .ended : .waiting }
            let end = source.queue.seconds(at: clock.writtenEnd)
            let heard = Swift.min(end, end - clock.delay + (time - clock.at))
            if heard >= end, source.queue.isEnded { return .ended }
            return .playing(heard)
        }
    }

    /// Stops the thread (fading out what plays) and closes the device.
    public func close() {
        var waiters: [CheckedContinuation<SoundAvailability, Never>] = []
        var availability = SoundAvailability.opening
        let time = now()
        changing { s in
            s.closed = true
            s.fade = Self.fadeOut(s.source, at: time) ?? s.fade
            s.flush = s.flush || s.fade != nil
            s.source = nil
            (waiters, availability) = (s.settledWaiters, s.availability)
            s.settledWaiters = []
        }
        for waiter in waiters { waiter.resume(returning: availability) }
    }

    /// Where sound goes once the device is open, or why there is none (at once when that is known; `opening`
    /// when the output is closed first).
    public func settled() async -> SoundAvailability {
        await withCheckedContinuation { continuation in
            let known = locked { s -> SoundAvailability? in
                guard s.availability == .opening, !s.closed else { return s.availability }
                s.settledWaiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    /// The device opened or could not: says so to those waiting in `settled()`.
    private func settle(_ availability: SoundAvailability) {
        let waiters = locked { s in
            s.availability = availability
            defer { s.settledWaiters = [] }
            return s.settledWaiters
        }
        for waiter in waiters { waiter.resume(returning: availability) }
    }

    /// What of `source` fades out when it is cut at `time`: from the frame being heard then (nil before any of it
    /// was written).
    private static func fadeOut(_ source: Source?, at time: Double) -> Fade? {
        guard let source, let clock = source.clock else { return nil }
        let rate = Double(source.queue.format.rate)
        let pending = Int64((Swift.max(0, clock.delay - (time - clock.at)) * rate).rounded())
        return Fade(queue: source.queue, frame: Swift.max(0, clock.writtenEnd - pending))
    }

    /// Writes `fade`'s next `fadeSeconds` ramped down to silence (after a flush: the wave goes on from where the
    /// device was and falls to zero instead of stopping dead).
    private static func writeFade(_ fade: Fade, to sink: any SoundSink) throws(SoundError) {
        let format = sink.format
        let frames = fadeFrames(format)
        var samples = [Int16](repeating: 0, count: frames * format.channels)
        var cursor = fade.frame
        guard case .sound = samples.withUnsafeMutableBufferPointer({ fade.queue.read(at: &cursor, into: $0) }) else {
            return
        }
        for frame in 0..<frames {
            let gain = Double(frames - 1 - frame) / Double(frames)
            for channel in 0..<format.channels {
                let index = frame * format.channels + channel
                samples[index] = Int16((Double(samples[index]) * gain).rounded())
            }
        }
        try samples.withUnsafeBufferPointer { (buffer) throws(SoundError) in try sink.write(buffer) }
    }

    /// Ramps the first `fadeSeconds` of a source up from silence: `written` of its frames went out before the
    /// `count` in `buffer`.
    private static func fadeIn(_ buffer: inout [Int16], count: Int, written: Int, format: SoundFormat) {
        let frames = fadeFrames(format)
        guard written < frames else { return }
        for frame in 0..<Swift.min(count, frames - written) {
            let gain = Double(written + frame + 1) / Double(frames + 1)
            for channel in 0..<format.channels {
                let index = frame * format.channels + channel
                buffer[index] = Int16((Double(buffer[index]) * gain).rounded())
            }
        }
    }

    private func locked<T>(_ body: (inout Shared) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&shared)
    }

    private func changing(_ body: (inout Shared) -> Void) {
        condition.lock()
        defer { condition.unlock() }
        body(&shared)
        condition.broadcast()
    }

    /// The playing source (if it is still the one of `generation`) ran out of decoded sound: one underrun, counted
    /// once until sound is written again.
    private func starved(generation: Int) {
        locked { s in
            guard var current = s.source, current.generation == generation, current.clock != nil, !current.starved
            else { return }
            current.starved = true
            s.underruns += 1
            s.source = current
        }
    }

    /// Waits until a change (`changing` broadcasts) or `seconds` passed.
    private func idle(for seconds: Double) {
        condition.lock()
        defer { condition.unlock() }
        if !shared.flush, !shared.closed, shared.fade == nil {
            _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        }
    }

    private func run() {
        let sink: any SoundSink
        do {
            sink = try open()
        } catch {
            settle(.unavailable(error.description))
            return
        }
        defer { sink.close() }
        settle(.ready(sink.name))
        let format = sink.format
        // 10 ms a write: the device is never more than that behind what the player asks for.
        let frames = Swift.max(1, format.rate / 100)
        var buffer = [Int16](repeating: 0, count: frames * format.channels)
        let silence = [Int16](repeating: 0, count: frames * format.channels)
        while true {
            let (source, flush, fade, closed) = locked { s in
                defer {
                    s.flush = false
                    s.fade = nil
                }
                return (s.source, s.flush, s.fade, s.closed)
            }
            if flush { sink.flush() }
            if let fade { try? Self.writeFade(fade, to: sink) }
            if closed { return }
            var wrote: (cursor: Int64, generation: Int, padding: Int)?
            var result = SoundQueue.Read.waiting
            if let source {
                var cursor = source.cursor
                result = buffer.withUnsafeMutableBufferPointer { source.queue.read(at: &cursor, into: $0) }
                if case .sound(let count) = result {
                    if count < frames {
                        for i in (count * format.channels)..<buffer.count { buffer[i] = 0 }
                    }
                    Self.fadeIn(&buffer, count: count, written: source.fadedIn, format: format)
                    wrote = (cursor, source.generation, frames - count)
                }
            }
            if wrote == nil {
                // Nothing to play: keep only a little silence queued, and look again when something changes or the
                // device ran down.
                let held = sink.delay
                // Before a story's first sample, silence would only be heard ahead of it, unaccounted for: a device
                // just flushed reports no delay until it starts again (and it cannot run dry before it started).
                let beforeFirst = source.map { $0.clock == nil } ?? false
                if held > Self.silenceAhead || beforeFirst {
                    if result == .waiting, let source { starved(generation: source.generation) }
                    // A story waiting for its first decoded sound is looked at again soon; with no story, a
                    // `play` wakes the thread at once.
                    idle(for: source == nil ? Swift.min(0.05, Swift.max(0.005, held - Self.silenceAhead)) : 0.005)
                    continue
                }
            }
            do {
                if wrote != nil {
                    try buffer.withUnsafeBufferPointer { try sink.write($0) }
                } else {
                    try silence.withUnsafeBufferPointer { try sink.write($0) }
                }
            } catch {
                locked { s in
                    s.availability = .unavailable((error as? SoundError)?.description ?? "\(error)")
                    s.source = nil
                }
                return
            }
            let delay = sink.delay
            let time = now()
            locked { s in
                guard var current = s.source, let source, current.generation == source.generation else { return }
                if let wrote {
                    current.fadedIn = Swift.min(Int.max / 2, current.fadedIn + frames - wrote.padding)
                    current.cursor = wrote.cursor
                    // The silence padding a short read sits after the last frame of sound in the device.
                    current.clock = (wrote.cursor, delay - Double(wrote.padding) / Double(format.rate), time)
                    current.starved = false
                }
                s.source = current
            }
            if wrote == nil, result == .waiting, let source { starved(generation: source.generation) }
        }
    }
}
