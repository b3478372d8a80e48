import Foundation
import MediaCache
import Testing

@testable import StoryPlayer

extension PlaybackMachine {
    /// A story of `duration` seconds already opened (what most tests start from).
    init(
        storyID: String, duration: Double, startThreshold: Double, readAhead: Double = 2, start: Double,
        waitLimit: Double? = nil, waitingSince: Double? = nil
    ) {
        self.init(
            storyID: storyID, startThreshold: startThreshold, readAhead: readAhead, start: start, waitLimit: waitLimit,
            waitingSince: waitingSince)
        _ = handle(.opened(duration: duration, contentLength: nil, cache: .miss, note: nil))
    }
}

/// The playback machine as a plain value: each event with every action it returns (emits included), the clock
/// that drives the playhead (the sound's while it is heard, the system's otherwise), sound started and stopped
/// exactly with playback, when the player must look again; then arbitrary orders of events against invariants.
struct PlaybackMachineTests {
    typealias Seen = PlaybackMachine.Observation

    /// A 5 s story that played its first frame at time 0, with sound ready to start when `sound` is true.
    static func playing(sound: Bool) -> (PlaybackMachine, [PlaybackMachine.Action]) {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        var actions = machine.look(Seen(now: 0, buffered: 5, sound: sound ? .waiting : nil))
        // With sound, the story starts when its first sample is heard.
        if sound { actions += machine.look(Seen(now: 0, buffered: 5, sound: .playing(0))) }
        return (machine, actions)
    }

    /// What drives the sound and the decoder, without the looking again.
    static func soundActions(_ actions: [PlaybackMachine.Action]) -> [PlaybackMachine.Action] {
        actions.filter {
            switch $0 {
            case .emit, .show, .wake: return false
            default: return true
            }
        }
    }

    @Test func theSoundStartsFirstAndTheFirstFrameIsEmittedAndShownWhenItIsHeard() {
        var machine = PlaybackMachine(storyID: "s", startThreshold: 0.5, start: 1)
        // Not opened yet: nothing to decide, nothing to wake for but news.
        #expect(machine.look(Seen(now: 1.1, buffered: 0)) == [.wake(at: nil)])
        #expect(
            machine.handle(.opened(duration: 5, contentLength: 1000, cache: .hit, note: nil)) == [])
        #expect(machine.status.duration == 5)
        #expect(machine.status.cache == .hit)
        // Ready to start: the sound is asked to start, and the story waits at its first frame until it is heard.
        var actions = machine.look(Seen(now: 1.25, buffered: 5, sound: .waiting))
        #expect(actions == [.startSound(at: 0), .wake(at: 1.25 + PlaybackMachine.soundStartInterval)])
        #expect(machine.status.state == .loading)
        actions = machine.look(Seen(now: 1.28, buffered: 5, sound: .playing(0)))
        #expect(
            actions == [
                .emit(.firstFrame(id: "s", startupMs: 280, cache: .hit, duration: 5)), .show(at: 0),
                // Next: the end (or the buffer running dry), 5 s on.
                .wake(at: 1.28 + 5),
            ])
        #expect(machine.status.state == .playing)
        #expect(machine.status.startupMs == 280)
    }

    @Test func aNoteIsEmittedOnceAndTheDecoderFailingAtTheMissingBytesIsNoError() {
        var machine = PlaybackMachine(storyID: "s", startThreshold: 0.5, start: 0)
        let note = "the file ends at byte 10, 2.9 s into the 6.0 s its header gives: it plays what is there"
        #expect(
            machine.handle(.opened(duration: 2.9, contentLength: 10, cache: .miss, note: note))
                == [.emit(.note(id: "s", message: note))])
        #expect(machine.status.note == note)
        _ = machine.look(Seen(now: 0, buffered: 2.9))
        var seen = Seen(now: 1, buffered: 1.5)
        seen.decoderFailure = "end of data"
        #expect(machine.look(seen) == [.show(at: 1), .wake(at: 1.5)])
        #expect(machine.status.state == .playing)
    }

    @Test func aPlayingStoryWakesForItsNextFrameTheBufferRunningDryOrItsEnd() {
        var (machine, _) = Self.playing(sound: false)
        var seen = Seen(now: 1, buffered: 3)
        seen.upcomingFrame = 1.04
        #expect(machine.look(seen) == [.show(at: 1), .wake(at: 1.04)])
        // Less buffered than the next frame is away: the stall's moment comes first.
        seen = Seen(now: 2, buffered: 1.5)
        seen.upcomingFrame = 2.5
        #expect(machine.look(seen) == [.show(at: 2), .wake(at: 2.5)])
        #expect(machine.status.bufferedSeconds == 0.5)
        // Everything buffered, no frame waiting (a still, or no video): the end.
        #expect(machine.look(Seen(now: 2.5, buffered: 3)) == [.show(at: 2.5), .wake(at: 5)])
    }

    @Test func mutedOrSilentStoriesFollowTheSystemClock() {
        var (machine, actions) = Self.playing(sound: false)
        #expect(machine.status.state == .playing)
        #expect(Self.soundActions(actions).isEmpty)
        actions = machine.look(Seen(now: 1.25, buffered: 4))
        #expect(machine.status.position == 1.25)
        #expect(Self.soundActions(actions).isEmpty)
    }

    @Test func theSoundsClockDrivesThePlayheadWhileItIsHeard() {
        var (machine, actions) = Self.playing(sound: true)
        #expect(Self.soundActions(actions) == [.startSound(at: 0)])
        // The device still plays what came before: the picture waits for the sound, whatever the system clock says.
        actions = machine.look(Seen(now: 0.06, buffered: 5, sound: .waiting))
        #expect(machine.status.position == 0)
        #expect(actions.last == .wake(at: 0.06 + PlaybackMachine.soundStartInterval))
        #expect(machine.status.state == .playing)
        // The sound runs slow (or the system clock fast): the picture follows the sound.
        _ = machine.look(Seen(now: 1.0, buffered: 5, sound: .playing(0.9)))
        #expect(machine.status.position == 0.9)
        _ = machine.look(Seen(now: 1.5, buffered: 5, sound: .playing(1.4)))
        #expect(machine.status.position == 1.4)
        // A clock reading behind the playhead never moves it back.
        _ = machine.look(Seen(now: 1.6, buffered: 5, sound: .playing(1.3)))
        #expect(machine.status.position == 1.4)
    }

    @Test func pauseStopsTheSoundAtOnceAndResumeStartsItWhereThePictureIs() {
        var (machine, _) = Self.playing(sound: true)
        _ = machine.look(Seen(now: 1, buffered: 4, sound: .playing(1)))
        #expect(machine.handle(.paused(true)) == [.stopSound])
        #expect(machine.status.state == .paused)
        // Paused for a while: nothing moves, nothing to wake for.
        #expect(machine.look(Seen(now: 9, buffered: 4, sound: .ended)) == [.show(at: 1), .wake(at: nil)])
        #expect(machine.status.position == 1)
        #expect(machine.handle(.paused(false)) == [.startSound(at: 1)])
        _ = machine.look(Seen(now: 9.5, buffered: 4, sound: .waiting))
        #expect(machine.status.position == 1)
    }

    @Test func aSeekPastTheDownloadRestartsItAndTheSoundStartsAgainAtTheNewPlayhead() {
        var (machine, _) = Self.playing(sound: true)
        var seen = Seen(now: 1, buffered: 1.5, sound: .playing(1))
        seen.downloadedThrough = 2.5
        _ = machine.look(seen)
        // Within what the download reached: the decoder seeks, the download goes on.
        #expect(machine.handle(.seek(by: 0.5)) == [.seek(to: 1.5), .stopSound])
        #expect(machine.status.bufferedSeconds == 0)
        // Past it: the download starts again there.
        #expect(machine.handle(.seek(by: 1.5)) == [.seek(to: 3), .restartDownload(at: 3)])
        #expect(machine.status.position == 3)
        // Data at the new playhead: playback goes on from there, with its sound.
        let actions = machine.look(Seen(now: 1.2, buffered: 2, sound: .waiting))
        #expect(machine.status.state == .playing)
        #expect(Self.soundActions(actions) == [.startSound(at: 3)])
        _ = machine.look(Seen(now: 1.4, buffered: 2, sound: .playing(3.1)))
        #expect(machine.status.position == 3.1)
        // A seek while loading is ignored.
        var loading = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        #expect(loading.handle(.seek(by: 2)) == [])
        #expect(loading.status.position == 0)
    }

    @Test func aStallStopsTheSoundAndItStartsAgainWithThePicture() {
        var (machine, _) = Self.playing(sound: true)
        // The sound ran on to 1.0 but only 0.8 s is buffered: the playhead stops where the data does.
        var actions = machine.look(Seen(now: 1, buffered: 0.8, sound: .playing(1)))
        #expect(machine.status.state == .stalled)
        #expect(machine.status.position == 0.8)
        #expect(actions == [.emit(.stall(id: "s", positionMs: 800)), .show(at: 0.8), .stopSound, .wake(at: nil)])
        actions = machine.look(Seen(now: 2, buffered: 0.6, sound: .ended))
        #expect(machine.status.state == .playing)
        #expect(actions.first == .emit(.stallEnd(id: "s", durationMs: 1000)))
        #expect(Self.soundActions(actions) == [.startSound(at: 0.8)])
        #expect(machine.status.stalls == 1)
    }

    @Test func mutingHandsThePlayheadToTheSystemClockAndUnmutingBackToTheSound() {
        var (machine, _) = Self.playing(sound: true)
        _ = machine.look(Seen(now: 1, buffered: 4, sound: .playing(1)))
        var actions = machine.look(Seen(now: 1.5, buffered: 4, sound: nil))
        #expect(Self.soundActions(actions) == [.stopSound])
        #expect(machine.status.position == 1.5)
        // Unmuted: the picture waits for the sound to start where it is.
        actions = machine.look(Seen(now: 2, buffered: 3, sound: .waiting))
        #expect(machine.status.position == 1.5)
        #expect(Self.soundActions(actions) == [.startSound(at: 1.5)])
        _ = machine.look(Seen(now: 2.1, buffered: 3, sound: .playing(1.55)))
        #expect(machine.status.position == 1.55)
    }

    @Test func soundThatEndsBeforeThePictureLeavesTheRestToTheSystemClock() {
        var (machine, _) = Self.playing(sound: true)
        _ = machine.look(Seen(now: 4.5, buffered: 5, sound: .playing(4.5)))
        var actions = machine.look(Seen(now: 4.7, buffered: 0.5, sound: .ended))
        #expect(abs(machine.status.position - 4.7) < 1e-9)
        #expect(Self.soundActions(actions) == [.stopSound])
        actions = machine.look(Seen(now: 5.2, buffered: 0.3, sound: .ended))
        #expect(machine.status.state == .finished)
        #expect(Self.soundActions(actions).isEmpty)
        #expect(!actions.contains { if case .wake = $0 { true } else { false } })
        // Over: nothing more happens.
        #expect(machine.look(Seen(now: 6, buffered: 0)) == [])
        #expect(machine.handle(.paused(true)) == [])
    }

    @Test func theStoryEndingStopsItsSound() {
        var (machine, _) = Self.playing(sound: true)
        let actions = machine.look(Seen(now: 5, buffered: 5, sound: .playing(5)))
        #expect(machine.status.state == .finished)
        #expect(actions == [.show(at: 5), .stopSound])
    }

    /// A story ends at its duration exactly, though its steps add up to a rounding error short of it (a busy machine
    /// that wakes at other times sums other steps; the end must not depend on that).
    @Test func aStoryEndsAtItsDurationExactly() {
        var (machine, _) = Self.playing(sound: false)
        var now = 0.0
        for _ in 0..<50 {
            now += 0.1
            _ = machine.look(Seen(now: now, buffered: 5))
        }
        #expect(now < 5)
        #expect(machine.status.state == .finished)
        #expect(machine.status.position == 5)
    }

    @Test func nothingPlaysBeforeTheFirstFrame() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0, waitLimit: 30)
        var actions = machine.look(Seen(now: 0.3, buffered: 5, firstFrameReady: false, sound: .waiting))
        #expect(machine.status.state == .loading)
        // The bytes are there: woken by the decoder's first frame, not at the wait limit.
        #expect(actions == [.wake(at: nil)])
        actions = machine.look(Seen(now: 0.4, buffered: 5, firstFrameReady: true, sound: .waiting))
        #expect(Self.soundActions(actions) == [.startSound(at: 0)])
        _ = machine.look(Seen(now: 0.42, buffered: 5, firstFrameReady: true, sound: .playing(0)))
        #expect(machine.status.startupMs == 420)
    }

    @Test func failuresEndTheStoryWithTheOriginsFaultFirst() {
        // Told that the video failed: the story is over, and told once.
        var (machine, _) = Self.playing(sound: true)
        _ = machine.look(Seen(now: 1, buffered: 4, sound: .playing(1)))
        #expect(
            machine.handle(.failed("the origin is gone")) == [.stopSound, .emit(.failed(id: "s", message: "the origin is gone"))])
        #expect(machine.status.state == .failed)
        #expect(machine.status.error == "the origin is gone")
        #expect(machine.handle(.failed("again")) == [])
        var seen: Seen
        // The decoder failing for bytes the download could not get reports the download's failure.
        (machine, _) = Self.playing(sound: false)
        seen = Seen(now: 1, buffered: 4)
        seen.decoderFailure = "invalid data"
        #expect(machine.look(seen) == [.fail("cannot decode the video: invalid data")])
        (machine, _) = Self.playing(sound: false)
        seen.downloadFailure = "connection refused"
        #expect(machine.look(seen) == [.fail("connection refused")])
        // A failed download alone plays out what is buffered, then fails.
        (machine, _) = Self.playing(sound: false)
        seen = Seen(now: 1, buffered: 2)
        seen.downloadFailure = "connection refused"
        #expect(machine.look(seen) == [.show(at: 1), .wake(at: 2)])
        seen.now = 3
        seen.buffered = 1
        #expect(machine.look(seen).last == .fail("connection refused"))
    }

    @Test func loadingWithoutBytesGivesUpAtTheWaitLimitButASlowDecoderDoesNot() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0, waitLimit: 30)
        #expect(machine.look(Seen(now: 29.9, buffered: 0.2)) == [.wake(at: 30)])
        #expect(machine.look(Seen(now: 30, buffered: 0.2)) == [.giveUp(waited: 30)])
        #expect(machine.status.state == .failed)
        // The bytes are there, the first frame is not: the decoder's turn, not the origin's.
        var decoding = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0, waitLimit: 30)
        #expect(decoding.look(Seen(now: 40, buffered: 5, firstFrameReady: false)) == [.wake(at: nil)])
        #expect(decoding.status.state == .loading)
        // A story that started over (a new version) at 100 s waits anew from there.
        var again = PlaybackMachine(
            storyID: "s", duration: 5, startThreshold: 0.5, start: 0, waitLimit: 30, waitingSince: 100)
        #expect(again.look(Seen(now: 120, buffered: 0.2)) == [.wake(at: 130)])
        #expect(again.look(Seen(now: 130, buffered: 0.2)) == [.giveUp(waited: 30)])
        // No limit: it waits for news.
        var patient = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        #expect(patient.look(Seen(now: 100, buffered: 0)) == [.wake(at: nil)])
    }

    @Test func aStallGivesUpAfterTheWaitLimitNotCountingPausedTime() {
        var machine = PlaybackMachine(storyID: "s", duration: 50, startThreshold: 0.5, start: 0, waitLimit: 30)
        _ = machine.look(Seen(now: 0, buffered: 2))
        #expect(machine.look(Seen(now: 2, buffered: 2)).last == .wake(at: 32))
        #expect(machine.status.state == .stalled)
        #expect(machine.look(Seen(now: 20, buffered: 0.1)) == [.show(at: 2), .wake(at: 32)])
        _ = machine.handle(.paused(true))
        #expect(machine.look(Seen(now: 100, buffered: 0.1)).last == .wake(at: nil))  // 80 s paused
        _ = machine.handle(.paused(false))
        // 18.1 s of the 30 waited: it looks again when the rest has passed.
        guard case .wake(let deadline?)? = machine.look(Seen(now: 100.1, buffered: 0.1)).last else {
            Issue.record("no deadline")
            return
        }
        #expect(abs(deadline - 112) < 1e-9)
        #expect(machine.status.state == .stalled)
        let actions = machine.look(Seen(now: 112.1, buffered: 0.1))
        guard case .giveUp(let waited)? = actions.first, actions.count == 1 else {
            Issue.record("\(actions)")
            return
        }
        #expect(abs(waited - 30.1) < 1e-6)
        #expect(machine.status.state == .failed)
    }

    /// An origin that sends a little after each retry and then nothing (every answer's first 100 kB): waits add
    /// up, loading included, so the story ends after 30 s of waiting in all, not 30 s of each stall (before: 42 s
    /// of a real story). Two seconds played without a stall forget the waits before them.
    @Test func waitsAddUpUntilTheStoryPlaysSmoothlyAgain() {
        var machine = PlaybackMachine(storyID: "s", duration: 50, startThreshold: 0.5, start: 0, waitLimit: 30)
        _ = machine.look(Seen(now: 5, buffered: 0))
        _ = machine.look(Seen(now: 10, buffered: 0.5))  // first frame after 10 s of loading
        #expect(machine.status.state == .playing)
        _ = machine.look(Seen(now: 10.5, buffered: 0.5))
        #expect(machine.status.state == .stalled)
        // 10 s waited already: the stall may last 20 s.
        #expect(machine.look(Seen(now: 11, buffered: 0)).last == .wake(at: 30.5))
        _ = machine.look(Seen(now: 30, buffered: 0.5))  // a retry's bytes: 19.5 s of stall
        #expect(machine.status.state == .playing)
        _ = machine.look(Seen(now: 30.5, buffered: 0.5))
        #expect(machine.status.state == .stalled)
        #expect(machine.look(Seen(now: 30.75, buffered: 0)).last == .wake(at: 31))
        let actions = machine.look(Seen(now: 31, buffered: 0))
        guard case .giveUp(let waited)? = actions.first else {
            Issue.record("\(actions)")
            return
        }
        #expect(abs(waited - 30) < 1e-6)

        // Recovered: 2 s played after a long wait, and a later stall has the whole 30 s again.
        var recovered = PlaybackMachine(storyID: "s", duration: 50, startThreshold: 0.5, start: 0, waitLimit: 30)
        _ = recovered.look(Seen(now: 25, buffered: 3))
        _ = recovered.look(Seen(now: 27, buffered: 3))
        _ = recovered.look(Seen(now: 28, buffered: 1))
        #expect(recovered.status.state == .stalled)
        #expect(recovered.look(Seen(now: 28, buffered: 0)).last == .wake(at: 58))
    }

    @Test func bytesArrivingEndTheStallAndItsCount() {
        var machine = PlaybackMachine(storyID: "s", duration: 100, startThreshold: 0.5, start: 0, waitLimit: 30)
        _ = machine.look(Seen(now: 0, buffered: 2))
        _ = machine.look(Seen(now: 2, buffered: 2))
        _ = machine.look(Seen(now: 22, buffered: 0))
        _ = machine.look(Seen(now: 23, buffered: 3))  // resumed
        #expect(machine.status.state == .playing)
        // Stalls again after 3 s of smooth play: a new count (after less, the waits would add up).
        _ = machine.look(Seen(now: 26, buffered: 3))
        _ = machine.look(Seen(now: 50, buffered: 0))
        #expect(machine.status.state == .stalled)
        #expect(machine.status.stalls == 2)
    }
}
