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
/// seconds), then writes the attached story's sound from its queue at a cursor, or silence when there is none, so
/// the stream never goes idle and the next story's sound starts at once. What it wrote and the device's delay
/// make the audio clock: the time of the frame being heard. Pause, seek and a story change flush the device, so
/// nothing of before is heard after.
public final class SoundOutput: @unchecked Sendable {
    struct Source {
        var id: Int
        var queue: SoundQueue
        var cursor: Int64
        /// Bumped by every `play`: a chunk read before it is not counted.
        var generation: Int
        var clock: (writtenEnd: Int64, delay: Double, at: Double)?
        var starved = false
    }

    struct Shared {
        var availability = SoundAvailability.opening
        var source: Source?
        var flush = false
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
        changing { s in
            s.generation += 1
            s.source = Source(id: id, queue: queue, cursor: queue.frame(at: seconds), generation: s.generation)
            s.flush = true
        }
    }

    /// Stops source `id` at once (what the device holds of it is dropped); nothing when another source plays.
    public func stop(id: Int) {
        changing { s in
            guard s.source?.id == id else { return }
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

    /// Stops the thread and closes the device.
    public func close() {
        var waiters: [CheckedContinuation<SoundAvailability, Never>] = []
        var availability = SoundAvailability.opening
        changing { s in
            s.closed = true
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
            let (source, flush, closed) = locked { s in
                defer { s.flush = false }
                return (s.source, s.flush, s.closed)
            }
            if closed { return }
            if flush { sink.flush() }
            var wrote: (cursor: Int64, generation: Int, padding: Int)?
            var result = SoundQueue.Read.waiting
            if let source {
                var cursor = source.cursor
                result = buffer.withUnsafeMutableBufferPointer { source.queue.read(at: &cursor, into: $0) }
                if case .sound(let count) = result {
                    if count < frames {
                        for i in (count * format.channels)..<buffer.count { buffer[i] = 0 }
                    }
                    wrote = (cursor, source.generation, frames - count)
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
                    current.cursor = wrote.cursor
                    // The silence padding a short read sits after the last frame of sound in the device.
                    current.clock = (wrote.cursor, delay - Double(wrote.padding) / Double(format.rate), time)
                    current.starved = false
                } else if result == .waiting, current.clock != nil, !current.starved {
                    current.starved = true
                    s.underruns += 1
                }
                s.source = current
            }
        }
    }
}
