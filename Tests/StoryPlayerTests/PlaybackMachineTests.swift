import Foundation
import MediaCache
import Testing

@testable import StoryPlayer

/// The playback machine as a plain value: the clock that drives the playhead (the sound's while it is heard, the
/// system's otherwise), and sound started and stopped exactly with playback.
struct PlaybackMachineTests {
    typealias Seen = PlaybackMachine.Observation

    /// A 5 s story that played its first frame at time 0, with sound ready to start when `sound` is true.
    static func playing(sound: Bool) -> (PlaybackMachine, [PlaybackMachine.Action]) {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        let actions = machine.tick(Seen(now: 0, buffered: 5, sound: sound ? .waiting : nil))
        return (machine, actions)
    }

    static func soundActions(_ actions: [PlaybackMachine.Action]) -> [PlaybackMachine.Action] {
        actions.filter { if case .emit = $0 { return false } else { return true } }
    }

    @Test func mutedOrSilentStoriesFollowTheSystemClock() {
        var (machine, actions) = Self.playing(sound: false)
        #expect(machine.status.state == .playing)
        #expect(Self.soundActions(actions).isEmpty)
        actions = machine.tick(Seen(now: 1.25, buffered: 4))
        #expect(machine.status.position == 1.25)
        #expect(Self.soundActions(actions).isEmpty)
    }

    @Test func theSoundsClockDrivesThePlayheadWhileItIsHeard() {
        var (machine, actions) = Self.playing(sound: true)
        #expect(Self.soundActions(actions) == [.startSound(at: 0)])
        // The device still plays what came before: the picture waits for the sound, whatever the system clock says.
        _ = machine.tick(Seen(now: 0.06, buffered: 5, sound: .waiting))
        #expect(machine.status.position == 0)
        #expect(machine.status.state == .playing)
        // The sound runs slow (or the system clock fast): the picture follows the sound.
        _ = machine.tick(Seen(now: 1.0, buffered: 5, sound: .playing(0.9)))
        #expect(machine.status.position == 0.9)
        _ = machine.tick(Seen(now: 1.5, buffered: 5, sound: .playing(1.4)))
        #expect(machine.status.position == 1.4)
        // A clock reading behind the playhead never moves it back.
        _ = machine.tick(Seen(now: 1.6, buffered: 5, sound: .playing(1.3)))
        #expect(machine.status.position == 1.4)
    }

    @Test func pauseStopsTheSoundAtOnceAndResumeStartsItWhereThePictureIs() {
        var (machine, _) = Self.playing(sound: true)
        _ = machine.tick(Seen(now: 1, buffered: 4, sound: .playing(1)))
        machine.setPaused(true)
        var actions = machine.tick(Seen(now: 1.02, buffered: 4, sound: .playing(1.02)))
        #expect(Self.soundActions(actions) == [.stopSound])
        #expect(machine.status.state == .paused)
        // Paused for a while: nothing moves.
        actions = machine.tick(Seen(now: 9, buffered: 4, sound: .ended))
        #expect(Self.soundActions(actions).isEmpty)
        #expect(machine.status.position == 1)
        machine.setPaused(false)
        actions = machine.tick(Seen(now: 9.5, buffered: 4, sound: .waiting))
        #expect(Self.soundActions(actions) == [.startSound(at: 1)])
        #expect(machine.status.position == 1)
    }

    @Test func aSeekRestartsTheSoundAtTheNewPlayhead() {
        var (machine, _) = Self.playing(sound: true)
        _ = machine.tick(Seen(now: 1, buffered: 4, sound: .playing(1)))
        machine.seek(by: 2)
        var actions = machine.tick(Seen(now: 1.02, buffered: 4, sound: .playing(1.02)))
        #expect(Self.soundActions(actions).first == .seek(to: 3))
        #expect(Self.soundActions(actions).contains(.stopSound))
        #expect(machine.status.position == 3)
        // Data at the new playhead arrives: playback goes on from there, with its sound.
        if machine.status.state == .stalled {
            actions = machine.tick(Seen(now: 1.2, buffered: 2, sound: .waiting))
        }
        #expect(machine.status.state == .playing)
        #expect(Self.soundActions(actions).last == .startSound(at: 3))
        _ = machine.tick(Seen(now: 1.4, buffered: 2, sound: .playing(3.1)))
        #expect(machine.status.position == 3.1)
    }

    @Test func aStallStopsTheSoundAndItStartsAgainWithThePicture() {
        var (machine, _) = Self.playing(sound: true)
        // The sound ran on to 1.0 but only 0.8 s is buffered: the playhead stops where the data does.
        var actions = machine.tick(Seen(now: 1, buffered: 0.8, sound: .playing(1)))
        #expect(machine.status.state == .stalled)
        #expect(machine.status.position == 0.8)
        #expect(Self.soundActions(actions) == [.stopSound])
        actions = machine.tick(Seen(now: 2, buffered: 0.6, sound: .ended))
        #expect(machine.status.state == .playing)
        #expect(Self.soundActions(actions) == [.startSound(at: 0.8)])
        #expect(machine.status.stalls == 1)
    }

    @Test func mutingHandsThePlayheadToTheSystemClockAndUnmutingBackToTheSound() {
        var (machine, _) = Self.playing(sound: true)
        _ = machine.tick(Seen(now: 1, buffered: 4, sound: .playing(1)))
        var actions = machine.tick(Seen(now: 1.5, buffered: 4, sound: nil))
        #expect(Self.soundActions(actions) == [.stopSound])
        #expect(machine.status.position == 1.5)
        // Unmuted: the picture waits for the sound to start where it is.
        actions = machine.tick(Seen(now: 2, buffered: 3, sound: .waiting))
        #expect(machine.status.position == 1.5)
        #expect(Self.soundActions(actions) == [.startSound(at: 1.5)])
        _ = machine.tick(Seen(now: 2.1, buffered: 3, sound: .playing(1.55)))
        #expect(machine.status.position == 1.55)
    }

    @Test func soundThatEndsBeforeThePictureLeavesTheRestToTheSystemClock() {
        var (machine, _) = Self.playing(sound: true)
        _ = machine.tick(Seen(now: 4.5, buffered: 5, sound: .playing(4.5)))
        var actions = machine.tick(Seen(now: 4.7, buffered: 0.5, sound: .ended))
        #expect(abs(machine.status.position - 4.7) < 1e-9)
        #expect(Self.soundActions(actions) == [.stopSound])
        actions = machine.tick(Seen(now: 5.2, buffered: 0.3, sound: .ended))
        #expect(machine.status.state == .finished)
        #expect(Self.soundActions(actions).isEmpty)
    }

    @Test func theStoryEndingStopsItsSound() {
        var (machine, _) = Self.playing(sound: true)
        let actions = machine.tick(Seen(now: 5, buffered: 5, sound: .playing(5)))
        #expect(machine.status.state == .finished)
        #expect(Self.soundActions(actions) == [.stopSound])
    }

    @Test func nothingPlaysBeforeTheFirstFrame() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        var actions = machine.tick(Seen(now: 0.3, buffered: 5, firstFrameReady: false, sound: .waiting))
        #expect(machine.status.state == .loading)
        #expect(actions.isEmpty)
        actions = machine.tick(Seen(now: 0.4, buffered: 5, firstFrameReady: true, sound: .waiting))
        #expect(machine.status.startupMs == 400)
        #expect(Self.soundActions(actions) == [.startSound(at: 0)])
    }

    @Test func loadingWithoutBytesGivesUpAtTheWaitLimitButASlowDecoderDoesNot() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0, waitLimit: 30)
        #expect(machine.tick(Seen(now: 29.9, buffered: 0.2)).isEmpty)
        #expect(machine.tick(Seen(now: 30, buffered: 0.2)) == [.giveUp(waited: 30)])
        #expect(machine.status.state == .failed)
        // The bytes are there, the first frame is not: the decoder's turn, not the origin's.
        var decoding = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0, waitLimit: 30)
        #expect(decoding.tick(Seen(now: 40, buffered: 5, firstFrameReady: false)).isEmpty)
        #expect(decoding.status.state == .loading)
        // A story that started over (a new version) at 100 s waits anew from there.
        var again = PlaybackMachine(
            storyID: "s", duration: 5, startThreshold: 0.5, start: 0, waitLimit: 30, waitingSince: 100)
        #expect(again.tick(Seen(now: 120, buffered: 0.2)).isEmpty)
        #expect(again.tick(Seen(now: 130, buffered: 0.2)) == [.giveUp(waited: 30)])
        // No limit: it waits.
        var patient = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        #expect(patient.tick(Seen(now: 100, buffered: 0)).isEmpty)
    }

    @Test func aStallGivesUpAfterTheWaitLimitNotCountingPausedTime() {
        var machine = PlaybackMachine(storyID: "s", duration: 50, startThreshold: 0.5, start: 0, waitLimit: 30)
        _ = machine.tick(Seen(now: 0, buffered: 2))
        _ = machine.tick(Seen(now: 2, buffered: 2))
        #expect(machine.status.state == .stalled)
        _ = machine.tick(Seen(now: 20, buffered: 0.1))
        machine.setPaused(true)
        _ = machine.tick(Seen(now: 100, buffered: 0.1))  // 80 s paused: not waiting on the origin
        machine.setPaused(false)
        _ = machine.tick(Seen(now: 100.1, buffered: 0.1))
        #expect(machine.status.state == .stalled)
        let actions = machine.tick(Seen(now: 112.1, buffered: 0.1))
        guard case .giveUp(let waited)? = actions.first, actions.count == 1 else {
            Issue.record("\(actions)")
            return
        }
        #expect(abs(waited - 30.1) < 1e-6)
        #expect(machine.status.state == .failed)
    }

    @Test func bytesArrivingEndTheStallAndItsCount() {
        var machine = PlaybackMachine(storyID: "s", duration: 100, startThreshold: 0.5, start: 0, waitLimit: 30)
        _ = machine.tick(Seen(now: 0, buffered: 2))
        _ = machine.tick(Seen(now: 2, buffered: 2))
        _ = machine.tick(Seen(now: 22, buffered: 0))
        _ = machine.tick(Seen(now: 23, buffered: 1))  // resumed
        #expect(machine.status.state == .playing)
        _ = machine.tick(Seen(now: 24, buffered: 1))  // stalls again: a new count
        _ = machine.tick(Seen(now: 44, buffered: 0))
        #expect(machine.status.state == .stalled)
    }
}
