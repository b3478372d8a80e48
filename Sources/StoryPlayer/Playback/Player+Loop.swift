import Foundation
import MediaCache

/// The playback loop of one attempt, and what it measures of the buffer.
extension Player {
    /// The playback loop: it looks at what the threads see, hands that and the viewer's keys to the machine, does
    /// what the machine says, and sleeps until the machine's next deadline or until woken.
    func play(
        _ run: MediaRun, machine: inout PlaybackMachine, generation: Int64?, decoder: MediaDecoder?,
        switcher: HLSVariantSwitch?
    ) async throws {
        // With a decoder, it reads the bytes on disk itself: the download brings only what is missing.
        let skipsCached = decoder != nil
        var reading = download.start(run, from: run.parts.played.lowerBound, switcher: switcher, skipsCached: skipsCached)
        // The check against the origin runs beside playback: look again when it has its answer.
        let checked = Task { [loader, key, wakeup] in
            await loader.checkFinished(key: key)
            wakeup.signal()
        }
        defer {
            reading.cancel()
            checked.cancel()
            sound?.stop(id: soundID)
        }
        var reportedCaption = CaptionReporting()
        while true {
            try Task.checkCancellation()
            var actions = tell(&machine, run: run, generation: generation, decoder: decoder)
            let (paused, seekBy) = shared.withLockedValue { s in
                defer { s.seekBy = 0 }
                return (s.paused, s.seekBy)
            }
            // Keys after the time that passed before them; then a fresh look (a seek lands where nothing is known).
            var keys = false
            if paused != machine.paused {
                actions += machine.handle(.paused(paused))
                keys = true
            }
            if seekBy != 0 {
                actions += machine.handle(.seek(by: seekBy))
                keys = true
            }
            if keys { actions += tell(&machine, run: run, generation: generation, decoder: decoder) }
            publish(machine)
            var wake = words.wake(machine.status, reported: &reportedCaption, decoder: decoder)
            for action in actions {
                switch action {
                case .emit(let event):
                    onEvent(event)
                case .seek(let position):
                    decoder?.seek(to: position)
                case .restartDownload(let position):
                    reading.cancel()
                    reading = download.start(run, at: position, switcher: switcher, skipsCached: skipsCached)
                case .startSound(let position):
                    if let queue = decoder?.sound { sound?.play(queue, from: position, id: soundID) }
                case .stopSound:
                    sound?.stop(id: soundID)
                case .show(let position):
                    decoder?.show(at: position)
                case .giveUp:
                    let parts = run.parts
                    let byte = parts.offset(at: machine.status.position)
                    let reached = Swift.max(
                        byte + parts.contiguousCached(from: byte, in: loader),
                        download.reached.end)
                    throw PlayerError(waiting.sentence(at: reached, of: run.estimatedLength))
                case .fail(let message):
                    throw PlayerError(message)
                case .restart:
                    publish(machine)
                    throw StartOver()
                case .wake(let deadline):
                    if let deadline { wake = Swift.min(wake ?? deadline, deadline) }
                }
            }
            if machine.status.state == .finished { return }
            try await wakeup.wait(until: wake, on: clock)
        }
    }

    /// Seconds of media available from the playhead at `position` on (contiguous), from disk or from a
    /// stream-through download.
    func bufferedSeconds(at position: Double, in parts: MediaParts, downloadedEnd: Int64) -> Double {
        let byte = parts.offset(at: position)
        let onDisk = parts.contiguousCached(from: byte, in: loader)
        let streamed = downloadedEnd - byte
        let bytes = Swift.min(Swift.max(onDisk, streamed, 0), parts.played.upperBound - byte)
        return Swift.max(0, parts.seconds(at: byte + bytes) - parts.seconds(at: byte))
    }
}
