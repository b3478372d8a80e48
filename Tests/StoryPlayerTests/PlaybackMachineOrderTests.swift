import Foundation
import MediaCache
import MediaTestSupport
import Testing

@testable import StoryPlayer

/// Arbitrary orders of events (seeded, so a failure reproduces) against what must always hold.
struct PlaybackMachineOrderTests {
    /// What the actions so far imply, checked against the machine after every event.
    struct Ledger {
        var soundOn = false
        var firstFrames = 0
        var stalls = 0
        var stalledNow = false
        var over = false

        mutating func check(
            _ event: PlaybackMachine.Event, _ actions: [PlaybackMachine.Action], _ machine: PlaybackMachine,
            before: PlaybackStatus, seed: UInt64, step: Int
        ) {
            let context = "seed \(seed) step \(step): \(event) -> \(actions)"
            if over {
                if case .failed = event, before.error == nil {} else {
                    #expect(actions.isEmpty, "\(context)")
                }
            }
            let status = machine.status
            let duration = status.duration ?? .infinity
            #expect(status.position >= 0 && status.position <= duration, "\(context)")
            let restarted = actions.contains(.restart)
            if restarted {
                // A new version: the story starts over, loading, its sound stopped first.
                #expect(actions.last == .restart && status.state == .loading && status.position == 0, "\(context)")
                firstFrames = 0
                stalls = 0
                stalledNow = false
            } else if case .seek = event {} else if case .opened = event {} else {
                #expect(status.position >= before.position, "the playhead went back: \(context)")
            }
            for (index, action) in actions.enumerated() {
                switch action {
                case .startSound:
                    #expect(!soundOn, "started twice: \(context)")
                    soundOn = true
                case .stopSound:
                    #expect(soundOn, "stopped twice: \(context)")
                    soundOn = false
                case .emit(.firstFrame):
                    firstFrames += 1
                case .emit(.stall):
                    #expect(!stalledNow, "\(context)")
                    stalledNow = true
                    stalls += 1
                case .emit(.stallEnd):
                    #expect(stalledNow, "\(context)")
                    stalledNow = false
                case .restartDownload(let at):
                    #expect(index > 0 && actions[index - 1] == .seek(to: at), "\(context)")
                case .wake(let deadline):
                    #expect(index == actions.count - 1, "\(context)")
                    if case .tick(let now) = event, let deadline {
                        // Never a deadline already passed: the loop would spin.
                        #expect(deadline > now, "\(context)")
                    }
                    if status.state == .playing || machine.heldForSoundSince != nil {
                        #expect(deadline != nil, "playing or waiting for sound without a deadline: \(context)")
                    }
                default:
                    break
                }
            }
            #expect(soundOn == machine.soundPlaying, "\(context)")
            // Sound plays while the story plays, and is asked to start while a story ready to start waits for it.
            if soundOn {
                let starting = status.state == .loading && machine.heldForSoundSince != nil
                #expect((status.state == .playing || starting) && !machine.paused, "\(context)")
            }
            #expect(firstFrames <= 1, "\(context)")
            #expect((status.startupMs != nil) == (firstFrames == 1), "\(context)")
            #expect(stalls == status.stalls, "\(context)")
            if case .tick = event, !over, status.state != .finished, status.state != .failed {
                #expect(actions.last.map { if case .wake = $0 { true } else { false } } ?? false, "\(context)")
            }
            if status.state == .finished || status.state == .failed { over = true }
        }
    }

    @Test(arguments: 0..<200)
    func invariantsHoldInAnyOrderOfEvents(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let duration = Double.random(in: 2...10, using: &random)
        var machine = PlaybackMachine(
            storyID: "s", startThreshold: 0.5, start: 0, waitLimit: Bool.random(using: &random) ? 30 : nil)
        var ledger = Ledger()
        var now = 0.0
        for step in 0..<150 {
            let event: PlaybackMachine.Event
            switch Int.random(in: 0..<20, using: &random) {
            case 0 where machine.status.duration == nil:
                event = .opened(duration: duration, contentLength: 1000, cache: .miss, note: nil)
            case 1: event = .paused(Bool.random(using: &random))
            case 2: event = .seek(by: Double.random(in: -3...3, using: &random))
            case 3 where Int.random(in: 0..<10, using: &random) == 0: event = .failed("broken")
            case 4:
                var frames = PlaybackMachine.Frames(firstFrameReady: Int.random(in: 0..<4, using: &random) > 0)
                if Bool.random(using: &random) {
                    frames.upcoming = machine.status.position + Double.random(in: -0.05...0.1, using: &random)
                }
                event = .frames(frames)
            case 5:
                let position = machine.status.position
                let reading: SoundReading?
                switch Int.random(in: 0..<4, using: &random) {
                case 0: reading = nil
                case 1: reading = .waiting
                case 2: reading = .playing(position + Double.random(in: -0.1...0.5, using: &random))
                default: reading = .ended
                }
                let story: StorySound = reading == nil ? [.off, .unknown, .muted].randomElement(using: &random) ?? .off : .playing
                event = .sound(PlaybackMachine.Sound(reading: reading, story: story))
            case 6, 7, 8:
                event = .bytes(
                    PlaybackMachine.Bytes(
                        buffered: Double.random(in: 0...3, using: &random),
                        downloadedThrough: machine.status.position + Double.random(in: 0...4, using: &random)))
            case 9 where Int.random(in: 0..<20, using: &random) == 0: event = .downloadFailed("gone")
            case 10 where Int.random(in: 0..<60, using: &random) == 0: event = .decoderFailed("bad")
            case 11 where Int.random(in: 0..<40, using: &random) == 0: event = .versionChanged(now: now)
            case 12 where Int.random(in: 0..<20, using: &random) == 0: event = .offline
            default:
                now += Double.random(in: 0...0.6, using: &random)
                event = .tick(now: now)
            }
            let before = machine.status
            let actions = machine.handle(event)
            ledger.check(event, actions, machine, before: before, seed: seed, step: step)
        }
    }
}
