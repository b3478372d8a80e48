import Foundation
import MediaCache
import MediaTestSupport
import Testing

@testable import StoryPlayer

/// Arbitrary orders of events (seeded, so a failure reproduces) against what must always hold.
struct PlaybackMachineOrderTests {
    typealias Seen = PlaybackMachine.Observation

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
            if case .seek = event {} else if case .opened = event {} else {
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
                    if case .observed(let seen) = event, let deadline {
                        // Never a deadline already passed: the loop would spin.
                        #expect(deadline > seen.now, "\(context)")
                    }
                    if status.state == .playing { #expect(deadline != nil, "playing without a deadline: \(context)") }
                default:
                    break
                }
            }
            #expect(soundOn == machine.soundPlaying, "\(context)")
            if soundOn { #expect(status.state == .playing && !machine.paused, "\(context)") }
            #expect(firstFrames <= 1, "\(context)")
            #expect((status.startupMs != nil) == (firstFrames == 1), "\(context)")
            #expect(stalls == status.stalls, "\(context)")
            if case .observed = event, !over, status.state != .finished, status.state != .failed {
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
        var opened = false
        for step in 0..<150 {
            let event: PlaybackMachine.Event
            switch Int.random(in: 0..<20, using: &random) {
            case 0 where !opened:
                opened = true
                event = .opened(duration: duration, contentLength: 1000, cache: .miss, note: nil)
            case 1: event = .paused(Bool.random(using: &random))
            case 2: event = .seek(by: Double.random(in: -3...3, using: &random))
            case 3 where Int.random(in: 0..<10, using: &random) == 0: event = .failed("broken")
            default:
                now += Double.random(in: 0...0.6, using: &random)
                let position = machine.status.position
                var seen = Seen(now: now, buffered: Double.random(in: 0...3, using: &random))
                seen.firstFrameReady = Int.random(in: 0..<4, using: &random) > 0
                switch Int.random(in: 0..<4, using: &random) {
                case 0: seen.sound = nil
                case 1: seen.sound = .waiting
                case 2: seen.sound = .playing(position + Double.random(in: -0.1...0.5, using: &random))
                default: seen.sound = .ended
                }
                if Bool.random(using: &random) { seen.upcomingFrame = position + Double.random(in: -0.05...0.1, using: &random) }
                seen.downloadedThrough = position + Double.random(in: 0...4, using: &random)
                if Int.random(in: 0..<60, using: &random) == 0 { seen.downloadFailure = "gone" }
                if Int.random(in: 0..<200, using: &random) == 0 { seen.versionChanged = true }
                if Int.random(in: 0..<200, using: &random) == 0 { seen.decoderFailure = "bad" }
                event = .observed(seen)
            }
            let before = machine.status
            let actions = machine.handle(event)
            ledger.check(event, actions, machine, before: before, seed: seed, step: step)
        }
    }
}
