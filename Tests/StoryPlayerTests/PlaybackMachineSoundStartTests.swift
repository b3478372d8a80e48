import Testing

@testable import StoryPlayer

/// A story starts with its sound: ready to start (bytes and a first frame), it waits at its first frame while the
/// sound device is still opening (a cold start) and while the sound asked for is not heard yet (a device's buffer
/// filling), for a bounded time, so its first frame counts as shown when its first sample is heard.
struct PlaybackMachineSoundStartTests {
    typealias Seen = PlaybackMachine.Observation

    static func seen(_ now: Double, _ sound: StorySound, reading: SoundReading? = nil) -> Seen {
        var seen = Seen(now: now, buffered: 5, sound: sound == .playing ? (reading ?? .waiting) : nil)
        seen.storySound = sound
        return seen
    }

    static func firstFrames(_ actions: [PlaybackMachine.Action]) -> [Int] {
        actions.compactMap {
            if case .emit(.firstFrame(_, let startupMs, _, _)) = $0 { return startupMs }
            return nil
        }
    }

    @Test func theFirstFrameWaitsForADeviceStillOpeningAndForItsFirstSampleToBeHeard() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        var actions = machine.look(Self.seen(0, .unknown))
        #expect(machine.status.state == .loading && Self.firstFrames(actions).isEmpty)
        #expect(actions.contains(.wake(at: PlaybackMachine.soundStartInterval)), "\(actions)")
        // 80 ms on, the device is still opening: the story still waits, and looks again soon.
        actions = machine.look(Self.seen(0.08, .unknown))
        #expect(machine.status.state == .loading && machine.status.position == 0)
        #expect(actions.contains(.wake(at: 0.08 + PlaybackMachine.soundStartInterval)), "\(actions)")
        // The device opened: the sound is asked to start at the story's zero; the story waits for it to be heard.
        actions = machine.look(Self.seen(0.12, .playing))
        #expect(PlaybackMachineTests.soundActions(actions) == [.startSound(at: 0)])
        #expect(machine.status.state == .loading && Self.firstFrames(actions).isEmpty)
        // Written but still in the device's buffer (heard 20 ms from now): still waiting, the sound not asked again.
        actions = machine.look(Self.seen(0.13, .playing, reading: .playing(-0.02)))
        #expect(machine.status.state == .loading && PlaybackMachineTests.soundActions(actions).isEmpty)
        // Its first sample is heard: the story starts, its first frame counted from now.
        actions = machine.look(Self.seen(0.15, .playing, reading: .playing(0)))
        #expect(machine.status.state == .playing && Self.firstFrames(actions) == [150])
        #expect(PlaybackMachineTests.soundActions(actions).isEmpty)
        _ = machine.look(Self.seen(0.2, .playing, reading: .playing(0.05)))
        #expect(abs(machine.status.position - 0.05) < 1e-9)
    }

    @Test func aDeviceThatDoesNotOpenWithinASecondIsNotWaitedOnAndItsSoundJoinsLate() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        _ = machine.look(Self.seen(0, .unknown))
        let held = machine.look(Self.seen(0.5, .unknown))
        #expect(machine.status.state == .loading)
        #expect(held.contains(.wake(at: 0.5 + PlaybackMachine.soundStartInterval)))
        // A second went by: the story starts alone, by the system clock.
        let started = machine.look(Self.seen(1.0, .unknown))
        #expect(machine.status.state == .playing && Self.firstFrames(started) == [1000])
        _ = machine.look(Self.seen(1.5, .unknown))
        #expect(abs(machine.status.position - 0.5) < 1e-9)
        // The device opens after all: the sound joins at the playhead, which waits for it from there.
        let actions = machine.look(Self.seen(2.0, .playing))
        #expect(PlaybackMachineTests.soundActions(actions) == [.startSound(at: 0.5)])
    }

    @Test func soundThatIsNeverHeardHoldsTheStartForASecondAtMost() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        let asked = machine.look(Self.seen(0, .playing))
        #expect(PlaybackMachineTests.soundActions(asked) == [.startSound(at: 0)])
        _ = machine.look(Self.seen(0.9, .playing, reading: .waiting))
        #expect(machine.status.state == .loading)
        let started = machine.look(Self.seen(1.0, .playing, reading: .waiting))
        #expect(machine.status.state == .playing && Self.firstFrames(started) == [1000])
        // The sound asked for stays asked for: the picture goes on with it once it is heard.
        #expect(PlaybackMachineTests.soundActions(started).isEmpty)
    }

    @Test func aStoryPausedBeforeItStartsDoesNotWaitForItsSound() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        _ = machine.handle(.paused(true))
        let actions = machine.look(Self.seen(0, .playing))
        #expect(machine.status.state == .paused && Self.firstFrames(actions) == [0])
        #expect(PlaybackMachineTests.soundActions(actions).isEmpty)
    }

    @Test func aStoryKnownToBeSilentIsNotHeld() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        let actions = machine.look(Self.seen(0, .silent))
        #expect(machine.status.state == .playing && Self.firstFrames(actions) == [0])
        _ = machine.look(Self.seen(0.3, .silent))
        #expect(abs(machine.status.position - 0.3) < 1e-9)
    }
}
