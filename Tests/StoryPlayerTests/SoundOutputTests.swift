import Foundation
import MediaTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import StoryPlayer

/// A sink that takes one write each time the test allows it, and records what it was given.
final class SteppedSink: SoundSink, @unchecked Sendable {
    let format = SoundFormat(rate: 1000, channels: 1)
    let name = "test"
    private let condition = NSCondition()
    private var allowed = 0
    private var closed = false
    /// Every write (samples) and flush (nil), in order.
    private(set) var log: [[Int16]?] = []
    private let delayBox = NIOLockedValueBox(0.05)
    /// What `delay` answers.
    var reportedDelay: Double {
        get { delayBox.withLockedValue { $0 } }
        set { delayBox.withLockedValue { $0 = newValue } }
    }

    func allow(_ writes: Int) {
        condition.lock()
        allowed += writes
        condition.broadcast()
        condition.unlock()
    }

    /// Writes taken so far.
    var writes: Int {
        condition.lock()
        defer { condition.unlock() }
        return log.filter { $0 != nil }.count
    }

    var entries: [[Int16]?] {
        condition.lock()
        defer { condition.unlock() }
        return log
    }

    func write(_ samples: UnsafeBufferPointer<Int16>) throws(SoundError) {
        condition.lock()
        defer { condition.unlock() }
        while allowed == 0, !closed { condition.wait() }
        if closed { throw SoundError("closed") }
        allowed -= 1
        log.append(Array(samples))
    }

    var delay: Double {
        condition.lock()
        delayReads += 1
        condition.unlock()
        return reportedDelay
    }

    /// Times `delay` was read since the last flush (the writing thread reads it at each look).
    private var delayReads = 0
    var delayReadsSinceFlush: Int {
        condition.lock()
        defer { condition.unlock() }
        return delayReads
    }

    func flush() {
        condition.lock()
        log.append(nil)
        delayReads = 0
        condition.unlock()
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}

struct SoundQueueTests {
    static let format = SoundFormat(rate: 1000, channels: 1)

    @Test func runsArePlacedByTheirTimestampsAndSmallSeamsClose() {
        let queue = SoundQueue(format: Self.format)
        // 1.4 s: where an HLS story's sound starts on its own clock, here already counted from its first frame.
        queue.append(at: 0.010, samples: [Int16](repeating: 1, count: 20))
        // 2 ms late by rounding: placed right after the run before.
        queue.append(at: 0.032, samples: [Int16](repeating: 2, count: 20))
        var cursor: Int64 = 0
        var buffer = [Int16](repeating: 9, count: 60)
        let read = buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) }
        // Silence before the sound starts, then both runs without a gap; nothing more is decoded yet.
        #expect(read == .sound(frames: 50))
        #expect(Array(buffer[0..<10]) == [Int16](repeating: 0, count: 10))
        #expect(Array(buffer[10..<30]) == [Int16](repeating: 1, count: 20))
        #expect(Array(buffer[30..<50]) == [Int16](repeating: 2, count: 20))
        #expect(cursor == 50)
        #expect(buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) } == .waiting)
        queue.markEnded()
        #expect(buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) } == .ended)
    }

    @Test func readingStartsAtTheCursorInsideARun() {
        let queue = SoundQueue(format: Self.format)
        queue.append(at: 0, samples: (0..<100).map { Int16($0) })
        var cursor = queue.frame(at: 0.04)
        var buffer = [Int16](repeating: 0, count: 5)
        #expect(buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) } == .sound(frames: 5))
        #expect(buffer == [40, 41, 42, 43, 44])
        queue.trim(before: 0.05)
        #expect(queue.decodedThrough == 0.1)
        queue.trim(before: 0.1)
        #expect(queue.decodedThrough == nil)
    }
}

@Suite(.serialized) struct SoundOutputTests {
    static func tone(_ value: Int16, seconds: Double) -> [Int16] {
        [Int16](repeating: value, count: Int(seconds * 1000))
    }

    /// A clock the test moves.
    final class Clock: Sendable {
        let time = NIOLockedValueBox(100.0)
        var now: Double { time.withLockedValue { $0 } }
    }

    @Test func nothingOfAStoryIsWrittenAfterTheNextStoryStarts() async throws {
        let sink = SteppedSink()
        let output = SoundOutput { () throws(SoundError) -> any SoundSink in sink }
        output.start()
        defer { output.close() }
        let first = SoundQueue(format: sink.format)
        first.append(at: 0, samples: Self.tone(100, seconds: 1))
        let second = SoundQueue(format: sink.format)
        second.append(at: 0, samples: Self.tone(250, seconds: 1))
        output.play(first, from: 0, id: 1)
        sink.allow(3)
        #expect(await eventually { sink.writes >= 3 })
        output.play(second, from: 0, id: 2)
        // The first story's player stops its sound late, after the second started: nothing of the second stops.
        output.stop(id: 1)
        sink.allow(5)
        #expect(await eventually { sink.writes >= 8 })
        let log = sink.entries
        // After the flush that came with the second story, the first one's 5 ms fading out, then only the
        // second's samples (or silence) reach the device.
        let lastFlush = try #require(log.lastIndex { $0 == nil })
        let writes = log[(lastFlush + 1)...].compactMap { $0 }
        #expect(writes.first == [80, 60, 40, 20, 0])
        let after = writes.dropFirst().flatMap { $0 }
        #expect(!after.isEmpty)
        #expect(!after.contains(100))
        #expect(after.contains(250))
        #expect(log[..<lastFlush].compactMap { $0 }.flatMap { $0 }.contains(100))
    }

    /// A cut (pause, seek, mute, the next story, quitting) fades out over 5 ms from the frame being heard, and
    /// sound starts by fading in: the wave never jumps to or from silence (a click). Before, a cut flushed the
    /// device mid-wave and a start began at full level.
    @Test func everyCutFadesOutAndEveryStartFadesIn() async throws {
        let sink = SteppedSink()
        let output = SoundOutput { () throws(SoundError) -> any SoundSink in sink }
        output.start()
        defer { output.close() }
        let queue = SoundQueue(format: sink.format)
        queue.append(at: 0, samples: Self.tone(1000, seconds: 2))
        output.play(queue, from: 0, id: 1)
        sink.allow(3)
        #expect(await eventually { sink.writes >= 3 })
        var log = sink.entries
        var flush = try #require(log.lastIndex { $0 == nil })
        let started = log[(flush + 1)...].compactMap { $0 }.flatMap { $0 }
        // 5 frames at 1 kHz: up from silence, then the tone.
        #expect(Array(started.prefix(6)) == [167, 333, 500, 667, 833, 1000], "\(started.prefix(12))")
        output.stop(id: 1)
        sink.allow(3)
        #expect(await eventually { sink.writes >= 4 })
        // Once the device runs low, silence keeps it going.
        sink.reportedDelay = 0.01
        #expect(await eventually { sink.writes >= 6 })
        log = sink.entries
        flush = try #require(log.lastIndex { $0 == nil })
        let stopped = log[(flush + 1)...].compactMap { $0 }
        #expect(stopped.first == [800, 600, 400, 200, 0], "\(stopped)")
        #expect(stopped.dropFirst().allSatisfy { $0.allSatisfy { $0 == 0 } })
        sink.reportedDelay = 0.05
        // Quitting while a story sounds fades it out too.
        output.play(queue, from: 1, id: 2)
        sink.allow(3)
        #expect(await eventually { sink.writes >= 9 })
        output.close()
        sink.allow(2)
        #expect(await eventually { sink.entries.last.map { $0 == [800, 600, 400, 200, 0] } ?? false })
    }

    /// A story whose sound is not decoded yet has no silence queued before it: its first frames are the first
    /// written after the cut, whether the device holds more than `silenceAhead` (0.05 s) or, just flushed, reports
    /// no delay until it runs again (PulseAudio while it fills its buffer anew: 0). Before, silence filled the
    /// device while the story waited, uncounted by the audio clock where it reported none, and the story's first
    /// frame was shown 30 to 80 ms before its sound was heard.
    @Test(arguments: [0.05, 0])
    func aStoryWaitingForItsSoundIsNotQueuedBehindSilence(reportedDelay: Double) async throws {
        let sink = SteppedSink()
        sink.reportedDelay = reportedDelay
        let output = SoundOutput { () throws(SoundError) -> any SoundSink in sink }
        output.start()
        defer { output.close() }
        let queue = SoundQueue(format: sink.format)
        output.play(queue, from: 0, id: 1)
        sink.allow(6)
        // The thread looked at the waiting story three times since the flush that started it.
        #expect(await eventually { sink.entries.contains { $0 == nil } && sink.delayReadsSinceFlush >= 3 })
        queue.append(at: 0, samples: Self.tone(1000, seconds: 1))
        #expect(await eventually { sink.writes >= 6 })
        let log = sink.entries
        let flush = try #require(log.lastIndex { $0 == nil })
        let written = log[(flush + 1)...].compactMap { $0 }
        #expect(written.first?.prefix(6) == [167, 333, 500, 667, 833, 1000], "\(written.prefix(2))")
        #expect(output.underruns == 0)
    }

    /// The decoder is asked for more as the device reads: a read that leaves less than the queue's low water
    /// decoded after its cursor tells it, one that leaves more does not, and an ended sound never does.
    @Test func readsAskForMoreSoundBelowTheLowWater() {
        let asked = NIOLockedValueBox(0)
        let queue = SoundQueue(format: SoundQueueTests.format, lowWater: 0.3) { asked.withLockedValue { $0 += 1 } }
        queue.append(at: 0, samples: Self.tone(5, seconds: 0.5))
        var cursor: Int64 = 0
        var buffer = [Int16](repeating: 0, count: 100)
        _ = buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) }
        #expect(asked.withLockedValue { $0 } == 0)  // 0.4 s left
        #expect(queue.readThrough == 0.1)
        _ = buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) }
        #expect(asked.withLockedValue { $0 } == 0)  // 0.3 s left: as much as the low water
        _ = buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) }
        #expect(asked.withLockedValue { $0 } == 1)  // 0.2 s left
        queue.markEnded()
        _ = buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) }
        #expect(asked.withLockedValue { $0 } == 1)
        queue.reset()
        #expect(queue.readThrough == nil)
    }

    @Test func theClockIsWhatWasWrittenLessTheDevicesDelay() async throws {
        let sink = SteppedSink()
        let clock = Clock()
        let output = SoundOutput(now: { clock.now }) { () throws(SoundError) -> any SoundSink in sink }
        output.start()
        defer { output.close() }
        let queue = SoundQueue(format: sink.format)
        queue.append(at: 2.0, samples: Self.tone(3, seconds: 1))
        #expect(output.reading(id: 7) == .ended)  // not playing
        output.play(queue, from: 2.0, id: 7)
        #expect(output.reading(id: 7) == .waiting)
        sink.allow(10)
        #expect(await eventually { sink.writes >= 10 })
        // The sound written since the flush that started it (a write of silence may have been under way before).
        let log = sink.entries
        let lastFlush = try #require(log.lastIndex { $0 == nil })
        // (Its first 5 ms fade in from silence.)
        let written = Double(log[(lastFlush + 1)...].compactMap { $0 }.flatMap { $0 }.filter { $0 != 0 }.count) / 1000
        #expect(written >= 0.08)
        func heard() -> Double? {
            if case .playing(let time) = output.reading(id: 7) { return time }
            return nil
        }
        #expect(await eventually { abs((heard() ?? 0) - (2.0 + written - 0.05)) < 1e-9 })
        // Time passes on the device: the frame heard moves with it, up to what was written.
        clock.time.withLockedValue { $0 += 0.03 }
        #expect(abs((heard() ?? 0) - (2.0 + written - 0.02)) < 1e-6)
        clock.time.withLockedValue { $0 += 1 }
        #expect(abs((heard() ?? 0) - (2.0 + written)) < 1e-9)
        #expect(output.underruns == 0)
    }

    @Test func aMissingDeviceSaysWhyAndNeverPlays() async throws {
        let output = SoundOutput { () throws(SoundError) -> any SoundSink in throw SoundError("no sound server") }
        output.start()
        #expect(await eventually { output.availability == .unavailable("no sound server") })
        let queue = SoundQueue(format: .standard)
        output.play(queue, from: 0, id: 1)
        #expect(output.reading(id: 1) == .ended)
    }
}
