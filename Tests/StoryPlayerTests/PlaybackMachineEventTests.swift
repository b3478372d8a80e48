import Foundation
import MediaCache
import Testing

@testable import StoryPlayer

/// The machine told one happening at a time: what it decides that the player used to (starting over on a new
/// version, the wait before the file opens, how far the download reads, where the playhead is between looks).
struct PlaybackMachineEventTests {
    static func bytes(_ buffered: Double, through: Double = .infinity) -> PlaybackMachine.Event {
        .bytes(PlaybackMachine.Bytes(buffered: buffered, downloadedThrough: through))
    }

    static func heard(_ reading: SoundReading?) -> PlaybackMachine.Event {
        .sound(PlaybackMachine.Sound(reading: reading, story: reading == nil ? .off : .playing))
    }

    @Test func eachHappeningIsToldAloneAndTheClocksTickDecides() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0)
        // Bytes arrived, the first frame is not decoded: told, nothing decided until the machine looks.
        #expect(machine.handle(Self.bytes(5)) == [])
        #expect(machine.handle(.frames(PlaybackMachine.Frames(firstFrameReady: false))) == [])
        #expect(machine.handle(.tick(now: 0.1)) == [.wake(at: nil)])
        #expect(machine.status.state == .loading)
        // The frame decoded: the next look plays.
        #expect(machine.handle(.frames(PlaybackMachine.Frames(firstFrameReady: true))) == [])
        #expect(
            machine.handle(.tick(now: 0.2))
                == [.emit(.firstFrame(id: "s", startupMs: 200, cache: .miss, duration: 5)), .show(at: 0), .wake(at: 5.2)])
        // More bytes do not move the playhead; the clock does, and what was buffered shrinks by what it passed.
        #expect(machine.handle(Self.bytes(5)) == [])
        #expect(machine.status.position == 0)
        _ = machine.handle(.tick(now: 1.2))
        #expect(machine.status.position == 1)
        #expect(machine.status.bufferedSeconds == 4)
        _ = machine.handle(.tick(now: 2.2))
        #expect(machine.status.position == 2)
        #expect(machine.status.bufferedSeconds == 3)
        // Sound that can be heard starts with the next look, where the picture is.
        #expect(machine.handle(Self.heard(.waiting)) == [])
        #expect(machine.handle(.tick(now: 2.3)).contains(.startSound(at: 2)))
    }

    @Test func aNewVersionStartsTheStoryOverTwiceAndThenFails() {
        var machine = PlaybackMachine(storyID: "s", duration: 5, startThreshold: 0.5, start: 0, waitLimit: 30)
        _ = machine.handle(Self.heard(.waiting))
        _ = machine.handle(Self.bytes(5))
        _ = machine.handle(.tick(now: 0.5))
        // The story starts when its first sample is heard, and the picture follows the sound from there.
        _ = machine.handle(Self.heard(.playing(0)))
        _ = machine.handle(.tick(now: 0.5))
        _ = machine.handle(Self.heard(.playing(1)))
        _ = machine.handle(.tick(now: 1.5))
        #expect(machine.soundPlaying && machine.status.position == 1)
        // The origin holds another version: the sound stops and the story starts over, waiting anew from then.
        #expect(machine.handle(.versionChanged(now: 2)) == [.stopSound, .restart])
        #expect(machine.status.state == .loading && machine.status.position == 0 && machine.status.duration == nil)
        #expect(machine.restarts == 1 && machine.waitingSince == 2 && !machine.soundPlaying)
        // Its startup time counts from when the story was asked for; its wait limit from the start over.
        _ = machine.handle(.opened(duration: 5, contentLength: 100, cache: .miss, note: nil))
        #expect(machine.handle(.tick(now: 31)) == [.wake(at: 32)])
        _ = machine.handle(Self.bytes(5))
        #expect(machine.handle(.tick(now: 31.5)).first == .emit(.firstFrame(id: "s", startupMs: 31_500, cache: .miss, duration: 5)))
        #expect(machine.handle(.versionChanged(now: 32)) == [.restart])
        #expect(machine.restarts == 2)
        // A third change: the story fails rather than start over without end.
        #expect(machine.handle(.versionChanged(now: 33)) == [.fail("the video changed at the origin")])
        #expect(machine.status.state == .failed)
        #expect(
            machine.handle(.failed("the video changed at the origin"))
                == [.emit(.failed(id: "s", message: "the video changed at the origin"))])
    }

    @Test func theWaitBeforeTheFileOpensIsBoundedToo() {
        var machine = PlaybackMachine(storyID: "s", startThreshold: 0.5, start: 10, waitLimit: 30)
        #expect(machine.handle(.tick(now: 10)) == [.wake(at: 40)])
        #expect(machine.handle(.tick(now: 39.9)) == [.wake(at: 40)])
        #expect(machine.handle(.tick(now: 40)) == [.giveUp(waited: 30)])
        #expect(machine.status.state == .failed)
        // Opened in time: the limit is then the first frame's.
        var opened = PlaybackMachine(storyID: "s", startThreshold: 0.5, start: 10, waitLimit: 30)
        _ = opened.handle(.tick(now: 20))
        _ = opened.handle(.opened(duration: 5, contentLength: 100, cache: .miss, note: nil))
        #expect(opened.handle(.tick(now: 25)) == [.wake(at: 40)])
        // No limit: it waits for news.
        var patient = PlaybackMachine(storyID: "s", startThreshold: 0.5, start: 10)
        #expect(patient.handle(.tick(now: 1000)) == [.wake(at: nil)])
    }

    @Test func theDownloadReadsAtMostReadAheadPastThePlayhead() {
        var machine = PlaybackMachine(storyID: "s", duration: 10, startThreshold: 0.5, readAhead: 2, start: 0)
        // Loading: two seconds past the start, not moving.
        #expect(machine.downloadLimit(at: 5) == (2, false))
        _ = machine.handle(Self.bytes(4))
        _ = machine.handle(.tick(now: 1))
        _ = machine.handle(.tick(now: 2))
        #expect(machine.status.position == 1)
        // Playing: the limit moves on with the clock between looks, within what is buffered.
        #expect(machine.downloadLimit(at: 2) == (3, true))
        #expect(machine.downloadLimit(at: 2.5) == (3.5, true))
        #expect(machine.status(at: 2.5).position == 1.5)
        #expect(machine.status(at: 2.5).bufferedSeconds == 2.5)
        #expect(machine.status(at: 100).position == 4)
        // Paused: it stays where the playhead is.
        _ = machine.handle(.paused(true))
        #expect(machine.downloadLimit(at: 3) == (3, false))
        #expect(machine.status(at: 3).position == 1)
    }

    @Test func thePlayheadDoesNotRunAheadOfSoundAboutToStart() {
        var machine = PlaybackMachine(storyID: "s", duration: 10, startThreshold: 0.5, start: 0)
        _ = machine.handle(Self.heard(.waiting))
        _ = machine.handle(Self.bytes(5))
        #expect(machine.handle(.tick(now: 1)).contains(.startSound(at: 0)))
        // The device has not played its first sample: the story waits at its first frame, between looks too.
        #expect(machine.status(at: 1.5).position == 0 && machine.status.state == .loading)
        _ = machine.handle(Self.heard(.playing(0)))
        _ = machine.handle(.tick(now: 1.2))
        #expect(machine.status.state == .playing && machine.status.position == 0)
        // Then the picture follows the sound, between looks by the system clock.
        _ = machine.handle(Self.heard(.playing(0.2)))
        _ = machine.handle(.tick(now: 1.4))
        #expect(abs(machine.status.position - 0.2) < 1e-9)
        #expect(abs(machine.status(at: 1.5).position - 0.3) < 1e-9)
    }
}
