import Foundation
import MediaTestSupport
import Testing

extension SoundServer {
    /// Passes a local socket's connections on to another after `argv[3]` seconds: a sound server slow to answer.
    static let slowProxy = """
        import socket, sys, threading, time
        path, target, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen(8)
        def pipe(a, b):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b.sendall(data)
            except OSError:
                pass
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        def serve(client):
            time.sleep(delay)
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(target)
            threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
            pipe(upstream, client)
        while True:
            client, _ = server.accept()
            threading.Thread(target=serve, args=(client,), daemon=True).start()
        """
}

extension SoundEndToEndTests {
    /// Three cold starts with a sound server that answers 0.4 s late, so the first frame is ready before the device
    /// is: the story's first beep (at its zero, 100 ms long) is still heard whole, and the beeps after it with their
    /// flashes. (Before, the picture ran on while the device opened, and the sound started where the picture was:
    /// its first tenths of a second were never heard.)
    @Test func aStoryStartIsHeardWholeWhenTheDeviceOpensLate() async throws {
        guard Self.runsAlone("a late device"), let media = try Self.soundAndMedia() else { return }
        defer { media.remove() }
        let flash = try await media.flashesAndBeeps(seconds: 4, fromZero: true)
        // In the shell: $0 the program, $1 the folder, $2 the playlist, $3 the proxy's code.
        let runs = 3
        // The proxy is this shell's own job, ended with it (it must not outlive the run holding its output open).
        let loop = "python3 -c \"$3\" \"$1/slow\" \"$1/native\" 0.4 >/dev/null 2>&1 </dev/null & proxy=$!; "
            + "trap 'kill $proxy 2>/dev/null' EXIT; "
            + "for i in $(seq 50); do [ -S \"$1/slow\" ] && break; sleep 0.1; done; "
            // Through a proxy, the client cannot hand the server shared memory: it sends the sound over the socket.
            + "printf 'enable-shm = no\\nenable-memfd = no\\n' >\"$1/slow.conf\"; "
            + "for i in $(seq \(runs)); do PULSE_SERVER=unix:$1/slow PULSE_CLIENTCONFIG=\"$1/slow.conf\" "
            + "\"$0\" play --headless --frame-events --network lan --sound pulse --cache-dir \"$1/cache-$i\" \"$2\" "
            + "|| exit $?; done"
        let (slices, samples, start) = try await SoundServer.coldStarts(
            of: flash, in: media, loop: loop, extra: [SoundServer.slowProxy])
        #expect(slices.count == runs, "\(slices.count) first frames in \(runs) runs")
        var report: [String] = []
        for (run, slice) in slices.enumerated() {
            let heard = try Self.heardMilliseconds(of: 0, in: slice, id: "flash", samples: samples, start: start)
            let offsets = try Self.beepOffsets(slice, id: "flash", seconds: 1...3, samples: samples, start: start)
            report.append("run \(run + 1): first beep heard \(heard) ms, beeps minus flashes \(offsets) ms")
            #expect(heard >= 90, "run \(run + 1): the first beep (100 ms) was heard for \(heard) ms: its start was cut")
            #expect(offsets.allSatisfy { abs($0) <= 40 }, "run \(run + 1): beep heard minus flash shown, ms: \(offsets)")
        }
        print(report.joined(separator: "\n"))
    }
}
