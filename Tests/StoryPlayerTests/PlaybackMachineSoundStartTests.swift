import Testing

@testable import StoryPlayer

/// A story's first sample is heard with its first frame: while the sound device is still opening (a cold start),
/// the picture waits at its first frame, for a bounded time, instead of running on without it.
struct PlaybackMachineSoundStartTests {
    typealias Seen = PlaybackMachine.Observation

    static func seen(_ now: Double, _ sound: StorySound, reading: SoundReading? = nil) -> Seen {
        var seen = Seen(now: now, buffered: 5, sound: sound == .playing ? (reading ?? .waiting) : nil)
        seen.storySound = sound
        return seen
    }

    @Test func theFirstFrameWaitsForADeviceStillOpeningAndTheSoundStartsAtItsFirstSample() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        var actions = machine.look(Self.seen(0, .unknown))
        #expect(actions.contains(.show(at: 0)) && machine.status.state == .playing)
        // 80 ms on, the device is still opening: the picture stays at its first frame and looks again soon.
        actions = machine.look(Self.seen(0.08, .unknown))
        #expect(machine.status.position == 0)
        #expect(actions.contains(.wake(at: 0.08 + PlaybackMachine.soundStartInterval)), "\(actions)")
        // The device opened: the sound starts at the story's zero, then the picture follows the sound.
        actions = machine.look(Self.seen(0.12, .playing))
        #expect(PlaybackMachineTests.soundActions(actions) == [.startSound(at: 0)])
        _ = machine.look(Self.seen(0.2, .playing, reading: .playing(0.05)))
        #expect(abs(machine.status.position - 0.05) < 1e-9)
    }

    @Test func aDeviceThatDoesNotOpenWithinASecondIsNotWaitedOnAndItsSoundJoinsLate() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        _ = machine.look(Self.seen(0, .unknown))
        let held = machine.look(Self.seen(0.5, .unknown))
        #expect(machine.status.position == 0)
        #expect(held.contains(.wake(at: 0.5 + PlaybackMachine.soundStartInterval)))
        // A second went by: the picture goes on by the system clock.
        _ = machine.look(Self.seen(1.0, .unknown))
        #expect(abs(machine.status.position - 0.5) < 1e-9)
        _ = machine.look(Self.seen(1.5, .unknown))
        #expect(abs(machine.status.position - 1.0) < 1e-9)
        // The device opens after all: the sound joins at the playhead, which waits for it from there.
        let actions = machine.look(Self.seen(2.0, .playing))
        #expect(PlaybackMachineTests.soundActions(actions) == [.startSound(at: 1.0)])
    }

    @Test func aStoryKnownToBeSilentIsNotHeld() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        _ = machine.look(Self.seen(0, .silent))
        _ = machine.look(Self.seen(0.3, .silent))
        #expect(abs(machine.status.position - 0.3) < 1e-9)
    }
}
