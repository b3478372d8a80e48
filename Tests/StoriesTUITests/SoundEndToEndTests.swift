import Foundation
import MediaTestSupport
import Testing

/// A private PulseAudio server with a null sink, a silent keep-alive stream (a new stream on an idle sink can start
/// up to 2 s late) and a recorder of the sink's monitor that notes when each chunk arrived, around one command: one
/// script, so the test runs one process (the server and recorder end with it).
enum SoundServer {
    static let rate = 48_000

    static func tool(_ name: String) -> String? {
        ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let missing =
        "pulseaudio, parec, ALSA's PulseAudio plugin and python3 not installed (apt-get install pulseaudio pulseaudio-utils libasound2-plugins python3)"

    static var available: Bool {
        let plugin = ["x86_64", "aarch64"].contains {
            FileManager.default.fileExists(atPath: "/usr/lib/\($0)-linux-gnu/alsa-lib/libasound_module_pcm_pulse.so")
        }
        return plugin && ["pulseaudio", "parec", "pacat", "python3"].allSatisfy { tool($0) != nil }
    }

    /// Writes each chunk from stdin to argv[1] and "arrival-time samples-so-far" to argv[2].
    static let stamper = """
        import os, sys, time
        out, log, total = open(sys.argv[1], 'wb'), open(sys.argv[2], 'w'), 0
        while True:
            data = os.read(0, 65536)
            now = time.monotonic()
            if not data:
                break
            out.write(data); out.flush(); total += len(data)
            log.write('%.6f %d\\n' % (now, total // 2)); log.flush()
        """

    /// Starts the server and the recorder in `folder`, runs `command` with stdout to folder/events.jsonl, and
    /// stops them. Polls are bounded (20 s for the server, 20 s for the first recorded bytes).
    static let script = """
        dir=$1; shift
        export XDG_RUNTIME_DIR=$dir PULSE_RUNTIME_PATH=$dir HOME=$dir PULSE_SERVER=unix:$dir/native
        trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' EXIT
        # The server and the recorder at real-time priority where allowed, as a desktop runs its sound server: a
        # busy machine then starves only the program under test, never the ear listening to it.
        rt=""; chrt -f 20 true 2>/dev/null && rt="chrt -f 20"
        printf 'pcm.!default { type pulse }\\nctl.!default { type pulse }\\n' >"$dir/.asoundrc"
        $rt pulseaudio -n --daemonize=no --exit-idle-time=-1 --disallow-exit -L 'module-null-sink sink_name=ci' \\
            -L module-native-protocol-unix >"$dir/server.log" 2>&1 &
        for i in $(seq 200); do [ -S "$dir/native" ] && break; sleep 0.1; done
        [ -S "$dir/native" ] || { echo "the sound server did not start: $(cat "$dir/server.log")" >&2; exit 90; }
        pacat --raw -d ci </dev/zero &
        $rt parec -d ci.monitor --raw --format=s16le --rate=48000 --channels=1 --latency-msec=10 \\
            | $rt python3 -c "$STAMPER" "$dir/recording.raw" "$dir/arrivals.txt" &
        for i in $(seq 200); do [ -s "$dir/arrivals.txt" ] && break; sleep 0.1; done
        [ -s "$dir/arrivals.txt" ] || { echo "nothing recorded from the sink's monitor" >&2; exit 91; }
        "$@" >"$dir/events.jsonl"
        status=$?
        sleep 0.5
        exit $status
        """

    /// The samples recorded in `folder`, and the monotonic time of the first: the earliest any chunk's arrival
    /// allows (a chunk arrives after its last sample was recorded, never before).
    static func recorded(in folder: URL) throws -> (samples: [Int16], start: Double) {
        let bytes = try Data(contentsOf: folder.appendingPathComponent("recording.raw"))
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self).prefix(bytes.count / 2)) }
        let lines = try String(contentsOf: folder.appendingPathComponent("arrivals.txt"), encoding: .utf8)
        let start = lines.split(separator: "\n").compactMap { line -> Double? in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let arrived = Double(parts[0]), let through = Double(parts[1]) else { return nil }
            return arrived - through / Double(rate)
        }.min() ?? 0
        return (samples, start)
    }

    /// Plays `clip` (in `media`'s folder, as a one-story playlist) with `loop`, a shell command run under a private
    /// server and recorder ($0 the program, $1 the folder, $2 the playlist, then `extra`); returns each run's events
    /// (from its first frame to the next run's) and the recording.
    static func coldStarts(of clip: String, in media: PhoneMedia, loop: String, extra: [String] = []) async throws
        -> (runs: [[[String: Any]]], samples: [Int16], start: Double)
    {
        let list = media.folder.appendingPathComponent("playlist.json")
        try """
            {"title": "Sync", "stories": [{"id": "flash", "title": "Flash and beep", "url": "\(clip)"}]}
            """.write(to: list, atomically: true, encoding: .utf8)
        let result = try await CLI.runTool("/bin/bash", [
            "-c", "STAMPER=\"$0\"; " + script, stamper, media.folder.path,
            "sh", "-c", loop, try CLI.binary().path, media.folder.path, list.path,
        ] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        let text = (try? String(contentsOf: media.folder.appendingPathComponent("events.jsonl"), encoding: .utf8)) ?? ""
        let events = text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let (samples, start) = try recorded(in: media.folder)
        let firsts = events.indices.filter { events[$0]["event"] as? String == "first_frame" }
        let runs = firsts.enumerated().map { run, first in
            Array(events[first..<(run + 1 < firsts.count ? firsts[run + 1] : events.count)])
        }
        return (runs, samples, start)
    }
}

/// What a person hears: each story's own tone, for its length, and a beep with the flash it goes with.
@Suite(.serialized) struct SoundEndToEndTests {
    /// Level and dominant frequency of `samples`.
    static func measure(_ samples: ArraySlice<Int16>) -> (rms: Double, hertz: Double) {
        guard samples.count > 1 else { return (0, 0) }
        let rms = (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
        let crossings = zip(samples, samples.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        return (rms, Double(crossings) / 2 / (Double(samples.count) / Double(SoundServer.rate)))
    }

    /// True when the tests that measure milliseconds may run: alone (`STORIES_TIMING_E2E=1 swift test --filter
    /// SoundEndToEndTests`, as bash .ci/run does after the suite). Beside the suite's other tests and its busy loops,
    /// what they measure would be the machine's load; there they say so and skip.
    static func runsAlone(_ what: String) -> Bool {
        guard ProcessInfo.processInfo.environment["STORIES_TIMING_E2E"] == "1" else {
            print("skipping \(what): it measures milliseconds, so it runs alone (STORIES_TIMING_E2E=1, as bash .ci/run does)")
            return false
        }
        return true
    }

    /// Through PulseAudio's client library, and through ALSA (its PulseAudio plugin, set as the default device in
    /// the server's home).
    @Test(arguments: ["pulse", "alsa"]) func eachStoryIsHeardAtItsPitchAndTheBeepWithItsFlash(output: String) async throws {
        guard Self.runsAlone("the beeps with their flashes"), let media = try Self.soundAndMedia() else { return }
        defer { media.remove() }
        let low = try await media.toneClip(hertz: 440, codec: "aac", container: "mp4")
        let high = try await media.toneClip(hertz: 880, codec: "libopus", container: "webm")
        let flash = try await media.flashesAndBeeps()
        let playlist = """
            {"title": "Sound", "stories": [
              {"id": "low", "title": "A", "url": "\(low)"},
              {"id": "high", "title": "A an octave up", "url": "\(high)"},
              {"id": "flash", "title": "Flash and beep", "url": "\(flash)"}]}
            """
        let list = media.folder.appendingPathComponent("playlist.json")
        try playlist.write(to: list, atomically: true, encoding: .utf8)
        let result = try await CLI.runTool("/bin/bash", [
            "-c", "STAMPER=\"$0\"; " + SoundServer.script, SoundServer.stamper, media.folder.path,
            try CLI.binary().path, "play", "--headless", "--no-preload", "--frame-events", "--network", "lan", "--sound", output,
            "--cache-dir", media.folder.appendingPathComponent("cache").path, list.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let text = (try? String(contentsOf: media.folder.appendingPathComponent("events.jsonl"), encoding: .utf8)) ?? ""
        let events = text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        func time(_ event: String, _ id: String, _ extra: (([String: Any]) -> Bool)? = nil) -> Double? {
            events.first { $0["event"] as? String == event && $0["id"] as? String == id && (extra?($0) ?? true) }?["monotonic"]
                as? Double
        }
        let (samples, start) = try SoundServer.recorded(in: media.folder)
        func index(_ monotonic: Double) -> Int { Swift.max(0, Swift.min(samples.count, Int((monotonic - start) * 48_000))) }

        // Each tone story: its pitch, heard for its length (2 s) between its first frame and its end.
        for (id, hertz) in [("low", 440.0), ("high", 880.0)] {
            let begin = try #require(time("first_frame", id), "no first_frame for \(id)")
            let end = try #require(time("story_end", id), "no story_end for \(id)")
            var heard = 0.0
            var at = index(begin - 0.2)
            while at + 2400 <= index(end + 0.2) {
                let (rms, measured) = Self.measure(samples[at..<(at + 2400)])
                if rms > 300, abs(measured - hertz) < hertz * 0.03 { heard += 0.05 }
                at += 2400
            }
            #expect(abs(heard - 2) <= 0.2, "\(output) \(id): \(hertz) Hz heard for \(heard) s of 2")
        }

        // The flash story: each beep starts within 40 ms of its white frame being shown.
        let offsets = try Self.beepOffsets(events, id: "flash", seconds: 1...4, samples: samples, start: start)
        #expect(offsets.allSatisfy { abs($0) <= 40 }, "\(output): beep heard minus flash shown, ms: \(offsets)")
    }

    /// Ten cold starts (a new process and an empty cache each time) with an HEVC story first, the slowest to
    /// open: every time, each beep is heard within 40 ms of its flash, the first (at the story's zero) whole with
    /// the first frame, though the sound device is still opening when that frame is ready; and the picture moves on
    /// from its first frame at once (the frame of 1 s is shown 1 s after the first).
    @Test func theFirstStoryIsInSyncOnEveryColdStart() async throws {
        guard Self.runsAlone("ten cold starts in sync"), let media = try Self.soundAndMedia() else { return }
        defer { media.remove() }
        let flash = try await media.flashesAndBeeps(seconds: 4, hevc: true, size: "1280x720", fromZero: true)
        let runs = 10
        // In the shell: $0 the program, $1 the folder, $2 the playlist.
        let loop = "for i in $(seq \(runs)); do \"$0\" play --headless --frame-events --network lan --sound pulse "
            + "--cache-dir \"$1/cache-$i\" \"$2\" || exit $?; done"
        let (slices, samples, start) = try await SoundServer.coldStarts(of: flash, in: media, loop: loop)
        #expect(slices.count == runs, "\(slices.count) first frames in \(runs) runs")
        var report: [String] = []
        for (run, slice) in slices.enumerated() {
            let shownFirst = try #require(slice.first?["monotonic"] as? Double)
            let secondShown = slice.first { $0["event"] as? String == "frame" && ($0["timeMs"] as? Int) == 1000 }?["monotonic"]
                as? Double
            let moved = secondShown.map { Int((($0 - shownFirst) * 1000).rounded()) }
            let offsets = try Self.beepOffsets(slice, id: "flash", seconds: 0...3, samples: samples, start: start)
            // The first beep is heard for its whole 100 ms: none of the story's start was skipped.
            let first = try Self.heardMilliseconds(of: 0, in: slice, id: "flash", samples: samples, start: start)
            report.append(
                "run \(run + 1): beep minus flash \(offsets) ms, first beep heard \(first) ms, 1 s frame "
                    + "\(moved.map(String.init) ?? "never") ms after the first")
            #expect(offsets.allSatisfy { abs($0) <= 40 }, "run \(run + 1): beep heard minus flash shown, ms: \(offsets)")
            #expect(first >= 90, "run \(run + 1): the first beep (100 ms) was heard for \(first) ms: its start was cut")
            #expect(moved.map { abs($0 - 1000) <= 100 } ?? false, "run \(run + 1): the frame of 1 s came \(moved ?? -1) ms after the first")
        }
        print(report.joined(separator: "\n"))
    }

    /// When the frame of `second` of `id` was shown: its `frame` event, or the story's `first_frame` for 0 s.
    static func shown(_ second: Int, in events: [[String: Any]], id: String) -> Double? {
        let event = events.first {
            guard $0["id"] as? String == id else { return false }
            if second == 0, $0["event"] as? String == "first_frame" { return true }
            return $0["event"] as? String == "frame" && ($0["timeMs"] as? Int) == second * 1000
        }
        return event?["monotonic"] as? Double
    }

    /// How long the beep of `second` is heard (ms): from its onset near the white frame of `id` to the first 5 ms
    /// of quiet after it.
    static func heardMilliseconds(
        of second: Int, in events: [[String: Any]], id: String, samples: [Int16], start: Double
    ) throws -> Int {
        func index(_ monotonic: Double) -> Int { Swift.max(0, Swift.min(samples.count, Int((monotonic - start) * 48_000))) }
        let shown = try #require(Self.shown(second, in: events, id: id), "no frame event at \(second) s")
        let onset = try #require(
            samples[index(shown - 0.5)..<index(shown + 0.5)].firstIndex { abs($0) > 3000 }, "no beep near \(second) s")
        var end = onset
        while end < samples.count, samples[end..<Swift.min(samples.count, end + 240)].contains(where: { abs($0) > 3000 }) {
            end += 240
        }
        return Int((Double(end - onset) / 48).rounded())
    }

    /// For each second in `seconds`, when the beep is heard minus when the white frame of `id` was shown (ms),
    /// from the first such frame event in `events`.
    static func beepOffsets(
        _ events: [[String: Any]], id: String, seconds: ClosedRange<Int>, samples: [Int16], start: Double
    ) throws -> [Int] {
        func index(_ monotonic: Double) -> Int { Swift.max(0, Swift.min(samples.count, Int((monotonic - start) * 48_000))) }
        var offsets: [Int] = []
        for second in seconds {
            let shown = try #require(Self.shown(second, in: events, id: id), "no frame event at \(second) s")
            let from = index(shown - 0.5)
            let to = index(shown + 0.5)
            let onset = try #require(
                samples[from..<to].firstIndex { abs($0) > 3000 }, "no beep heard within 0.5 s of the flash at \(second) s")
            offsets.append(Int(((start + Double(onset) / 48_000 - shown) * 1000).rounded()))
        }
        return offsets
    }

    /// The interactive screen in tmux (the picture as cells, redrawn every frame) playing an 8 s tone while a busy
    /// loop holds each of the two cores: the tone is heard whole, without a silence of 5 ms or more. It measures the
    /// machine's load, so it runs alone (see `runsAlone`).
    @Test func theScreenPlaysSoundWithoutDropoutsOnBusyCores() async throws {
        guard Self.runsAlone("the screen's sound on busy cores") else { return }
        guard let tmuxPath = Tmux.find() else {
            if PhoneMedia.required { Issue.record("tmux is not installed, and STORIES_REQUIRE_E2E=1 requires it") }
            return
        }
        guard let media = try Self.soundAndMedia() else { return }
        defer { media.remove() }
        let folder = media.folder.path
        let clip = try await media.toneClip(hertz: 440, codec: "aac", container: "mp4", seconds: 8)
        let list = media.folder.appendingPathComponent("playlist.json")
        try """
            {"title": "Tone", "stories": [{"id": "tone", "title": "Tone", "url": "\(clip)"}]}
            """.write(to: list, atomically: true, encoding: .utf8)
        // The server runs until `done` appears (at most a minute).
        let server = Task {
            try await CLI.runTool("/bin/bash", [
                "-c", "STAMPER=\"$0\"; " + SoundServer.script, SoundServer.stamper, folder, "sh", "-c",
                "for i in $(seq 600); do [ -e \"$0/done\" ] && exit 0; sleep 0.1; done", folder,
            ])
        }
        let done = media.folder.appendingPathComponent("done").path
        defer { _ = FileManager.default.createFile(atPath: done, contents: nil) }
        let arrivals = media.folder.appendingPathComponent("arrivals.txt").path
        let ready = ContinuousClock.now + .seconds(30)
        while (FileManager.default.contents(atPath: arrivals)?.count ?? 0) == 0, ContinuousClock.now < ready {
            try await Task.sleep(for: .milliseconds(100))
        }
        let tmux = Tmux(executable: tmuxPath, socket: folder + "/tmux.sock")
        let busy = try (0..<2).map { _ in try ChildProcess("/bin/sh", ["-c", "while :; do :; done"]) }
        defer { for loop in busy { loop.send(SIGKILL); loop.waitUntilExit() } }
        try await tmux.run([
            "new-session", "-d", "-s", "main", "-x", "120", "-y", "40",
            "env -u NO_COLOR LANG=C.UTF-8 COLORTERM=truecolor XDG_RUNTIME_DIR='\(folder)' PULSE_RUNTIME_PATH='\(folder)' "
                + "PULSE_SERVER='unix:\(folder)/native' '\(try CLI.binary().path)' '\(list.path)' --network lan "
                + "--cache-dir '\(folder)/cache' 2>'\(folder)/stderr.txt'",
        ])
        // Until the tone was heard and has ended (a deadline bounds it).
        let heardEnd = ContinuousClock.now + .seconds(60)
        var tone: Range<Int>?
        while ContinuousClock.now < heardEnd {
            try await Task.sleep(for: .milliseconds(250))
            let samples = try SoundServer.recorded(in: media.folder).samples
            if let found = Self.loudSpan(samples), samples.count - found.upperBound > 12_000 {
                tone = found
                break
            }
        }
        await tmux.kill()
        for loop in busy { loop.send(SIGKILL) }
        _ = FileManager.default.createFile(atPath: done, contents: nil)
        _ = try await server.value
        let samples = try SoundServer.recorded(in: media.folder).samples
        #expect(tone != nil, "the tone was not heard to its end within a minute")
        let span = try #require(Self.loudSpan(samples), "no tone recorded")
        let gaps = Self.silences(samples, in: span)
        let seconds = Double(span.count) / Double(SoundServer.rate)
        print("ui sound on busy cores: tone heard for \(String(format: "%.3f", seconds)) s, silences (ms): \(gaps)")
        #expect(gaps.isEmpty, "silences within the tone, ms: \(gaps)")
        #expect(abs(seconds - 8) <= 0.03, "the 8 s tone was heard for \(seconds) s")
    }

    /// The test media folder when the sound server and ffmpeg are there; nil otherwise (a skip, or a recorded
    /// failure under STORIES_REQUIRE_E2E=1).
    static func soundAndMedia() throws -> PhoneMedia? {
        guard SoundServer.available else {
            if PhoneMedia.required { Issue.record("\(SoundServer.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            return nil
        }
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required { Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            return nil
        }
        return media
    }

    /// Samples per 2.5 ms window, and the levels that count as sound and as silence for a tone at half scale.
    static let window = 120
    static let loud = 1_000.0
    static let quiet = 300.0

    /// Level of each 2.5 ms window of `samples`.
    static func levels(_ samples: ArraySlice<Int16>) -> [Double] {
        stride(from: samples.startIndex, to: samples.endIndex - window, by: window).map { start in
            let sum = samples[start..<(start + window)].reduce(0.0) { $0 + Double($1) * Double($1) }
            return (sum / Double(window)).squareRoot()
        }
    }

    /// From the first to the last loud window of `samples`.
    static func loudSpan(_ samples: [Int16]) -> Range<Int>? {
        let level = levels(samples[...])
        guard let first = level.firstIndex(where: { $0 > loud }), let last = level.lastIndex(where: { $0 > loud })
        else { return nil }
        return (first * window)..<((last + 1) * window)
    }

    /// Each run of two or more quiet windows inside `span` (not its first or last 50 ms), in milliseconds.
    static func silences(_ samples: [Int16], in span: Range<Int>) -> [Double] {
        let margin = SoundServer.rate / 20
        guard span.count > 2 * margin else { return [] }
        let level = levels(samples[(span.lowerBound + margin)..<(span.upperBound - margin)])
        var runs: [Double] = []
        var run = 0
        for value in level + [loud + 1] {
            if value < quiet {
                run += 1
            } else {
                if run >= 2 { runs.append(Double(run) * 2.5) }
                run = 0
            }
        }
        return runs
    }
}
