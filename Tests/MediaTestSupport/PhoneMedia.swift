import Foundation

/// Media as phones and CDNs make it, made with ffmpeg at test time into a fresh folder: rotated, anamorphic,
/// fragmented, WebM, photos, HDR, 60 fps.
public struct PhoneMedia {
    /// Where the media is made.
    public let folder: URL

    /// ffmpeg's path; nil when it is not installed.
    public static func ffmpeg() -> String? {
        ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
    }

    /// Why a test making media is skipped (or, with STORIES_REQUIRE_E2E=1, fails).
    public static let missing = "ffmpeg not installed (apt-get install ffmpeg)"

    /// True when a missing ffmpeg must fail the test rather than skip it.
    public static var required: Bool { ProcessInfo.processInfo.environment["STORIES_REQUIRE_E2E"] == "1" }

    /// A new folder to make media in; nil when ffmpeg is missing.
    public static func make() throws -> PhoneMedia? {
        guard ffmpeg() != nil else { return nil }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("phone-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return PhoneMedia(folder: folder)
    }

    /// Deletes the folder.
    public func remove() { try? FileManager.default.removeItem(at: folder) }

    /// Runs ffmpeg with `arguments`, writing `name` in the folder; returns the file's URL.
    @discardableResult
    public func ffmpeg(_ name: String, _ arguments: [String]) async throws -> URL {
        let folder = self.folder
        return try await offCooperativePool { try Self.run(name, arguments, in: folder) }
    }

    private static func run(_ name: String, _ arguments: [String], in folder: URL) throws -> URL {
        let process = try ChildProcess(
            Self.ffmpeg() ?? "/usr/bin/ffmpeg",
            ["-v", "error", "-y", "-nostdin"] + arguments + [folder.appendingPathComponent(name).path], stderr: .pipe)
        let text = String(decoding: process.stderr?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        guard process.waitUntilExit() == .exited(0) else { throw MediaMakingError(description: "ffmpeg \(name): \(text)") }
        return folder.appendingPathComponent(name)
    }

    /// ffmpeg failed.
    public struct MediaMakingError: Error, CustomStringConvertible { public let description: String }

    /// A 180×320 portrait picture, red above and blue below, stored turned so that a display matrix of
    /// `rotation` degrees (clockwise, as phones write it into the track header) shows it upright again.
    public func rotated(_ rotation: Int) async throws -> String {
        let turn: String
        // The track header's matrix (a, b, c, d, tx, ty) as phones and FFmpeg write it for each rotation.
        let matrix: [Int32]
        switch rotation {
        case 90: (turn, matrix) = ("transpose=cclock", [0, 1, -1, 0, 180, 0])
        case 180: (turn, matrix) = ("hflip,vflip", [-1, 0, 0, -1, 180, 320])
        case 270: (turn, matrix) = ("transpose=clock", [0, -1, 1, 0, 0, 320])
        default: (turn, matrix) = ("null", [1, 0, 0, 1, 0, 0])
        }
        let name = "rotated-\(rotation).mp4"
        let url = try await ffmpeg(name, [
            "-f", "lavfi", "-i", "color=red:s=180x160:d=1", "-f", "lavfi", "-i", "color=blue:s=180x160:d=1",
            "-filter_complex", "[0][1]vstack,\(turn),format=yuv420p", "-r", "25", "-c:v", "libx264",
        ])
        var bytes = [UInt8](try Data(contentsOf: url))
        guard let tkhd = (0..<(bytes.count - 4)).first(where: { bytes[$0..<($0 + 4)].elementsEqual("tkhd".utf8) }) else {
            throw MediaMakingError(description: "no tkhd in \(name)")
        }
        // Version 0: the matrix is 40 bytes into the box's body; 16.16 fixed point, w in 2.30.
        let values = [matrix[0] << 16, matrix[1] << 16, 0, matrix[2] << 16, matrix[3] << 16, 0, matrix[4] << 16, matrix[5] << 16, 1 << 30]
        for (i, value) in values.enumerated() {
            let at = tkhd + 4 + 40 + i * 4
            let raw = UInt32(bitPattern: value)
            bytes.replaceSubrange(at..<(at + 4), with: [UInt8(raw >> 24), UInt8(raw >> 16 & 0xFF), UInt8(raw >> 8 & 0xFF), UInt8(raw & 0xFF)])
        }
        try Data(bytes).write(to: url)
        return name
    }

    /// 352×288 coded pixels with a 16:11 sample aspect: shown 512×288.
    public func anamorphic() async throws -> String {
        try await ffmpeg("anamorphic.mp4", [
            "-f", "lavfi", "-i", "testsrc2=s=352x288:r=25:d=1", "-vf", "setsar=16/11", "-c:v", "libx264",
            "-pix_fmt", "yuv420p",
        ])
        return "anamorphic.mp4"
    }

    /// A solid `colour` (ffmpeg's 0xRRGGBB), encoded with the BT.709 matrix and tagged so (SD size, where the
    /// default would be BT.601).
    public func tagged709(_ colour: String) async throws -> String {
        try await ffmpeg("bt709.mp4", [
            "-f", "lavfi", "-i", "color=\(colour):s=320x240:d=1", "-vf", "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p",
            "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-c:v", "libx264",
        ])
        return "bt709.mp4"
    }

    /// A solid `colour` in full-range YUV (what phones' JPEG-range video and MJPEG use), tagged so.
    public func fullRange(_ colour: String) async throws -> String {
        try await ffmpeg("full-range.mp4", [
            "-f", "lavfi", "-i", "color=\(colour):s=320x240:d=1",
            "-vf", "scale=out_color_matrix=bt601:out_range=pc,format=yuv420p", "-color_range", "pc",
            "-colorspace", "smpte170m", "-c:v", "libx264",
        ])
        return "full-range.mp4"
    }

    /// An SDR grey of `level` (0-255) turned into 10-bit HEVC with the `transfer` ("arib-std-b67" HLG or
    /// "smpte2084" PQ), as phones record HDR.
    public func hdr(transfer: String, level: Int) async throws -> String {
        let name = "hdr-\(transfer).mp4"
        let hex = String(format: "0x%02x%02x%02x", level, level, level)
        try await ffmpeg(name, [
            "-f", "lavfi", "-i", "color=\(hex):s=320x240:d=1",
            "-vf", "zscale=tin=bt709:min=bt709:pin=bt709:rin=tv:t=\(transfer):m=bt2020nc:p=bt2020:r=tv:npl=100,format=yuv420p10le",
            "-c:v", "libx265", "-x265-params", "log-level=error", "-color_trc", transfer, "-color_primaries", "bt2020",
            "-colorspace", "bt2020nc",
        ])
        return name
    }

    /// `seconds` of 640×480 at 30 fps (about 0.5 MB a second) in 1-second fragments (`frag_keyframe+empty_moov`:
    /// no duration in `mvhd`).
    public func fragmented(seconds: Int = 3) async throws -> String {
        try await ffmpeg("fragmented.mp4", [
            "-f", "lavfi", "-i", "testsrc2=s=640x480:r=30:d=\(seconds)", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "30",
            "-crf", "12", "-preset", "ultrafast",
            "-movflags", "frag_keyframe+empty_moov",
        ])
        return "fragmented.mp4"
    }

    /// `seconds` of 320×240 at 30 fps with its header first (`faststart`), then cut at `fraction` of its bytes:
    /// a download that stopped halfway, whose header still gives the whole duration.
    public func truncated(seconds: Int = 6, fraction: Double = 0.5) async throws -> String {
        let url = try await ffmpeg("truncated.mp4", [
            "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=\(seconds)", "-c:v", "libx264", "-pix_fmt", "yuv420p",
            "-g", "30", "-crf", "20", "-preset", "ultrafast", "-movflags", "+faststart",
        ])
        let bytes = try Data(contentsOf: url)
        try bytes.prefix(Int(Double(bytes.count) * fraction)).write(to: url)
        return "truncated.mp4"
    }

    /// `seconds` of VP9 in WebM at about 0.5 MB a second, a key frame a second.
    public func webm(seconds: Int = 3) async throws -> String {
        try await ffmpeg("clip.webm", [
            "-f", "lavfi", "-i", "testsrc2=s=640x480:r=30:d=\(seconds)", "-c:v", "libvpx-vp9", "-b:v", "4M", "-g", "30",
            "-deadline", "realtime", "-cpu-used", "8",
        ])
        return "clip.webm"
    }

    /// A 640×480 photo (`jpg`, `png` or `webp`).
    public func photo(_ type: String) async throws -> String {
        let name = "photo.\(type)"
        try await ffmpeg(name, ["-f", "lavfi", "-i", "testsrc2=s=640x480", "-frames:v", "1"] + (type == "webp" ? ["-c:v", "libwebp"] : []))
        return name
    }

    /// A 320×160 JPEG, red on the left half and blue on the right, with an EXIF Orientation of `orientation`.
    public func exifPhoto(orientation: UInt8) async throws -> String {
        let plain = try await ffmpeg("plain.jpg", [
            "-f", "lavfi", "-i", "color=red:s=160x160", "-f", "lavfi", "-i", "color=blue:s=160x160",
            "-filter_complex", "[0][1]hstack", "-frames:v", "1",
        ])
        var bytes = [UInt8](try Data(contentsOf: plain))
        // APP1 "Exif": a big-endian TIFF header and one IFD entry, Orientation (0x0112, SHORT, 1).
        let tiff: [UInt8] = [0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0, 0, 0, 0, 0]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        bytes.insert(contentsOf: [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload, at: 2)
        let name = "exif-\(orientation).jpg"
        try Data(bytes).write(to: folder.appendingPathComponent(name))
        return name
    }

    /// 2 s at 60 fps.
    public func sixtyFPS() async throws -> String {
        try await ffmpeg("sixty.mp4", [
            "-f", "lavfi", "-i", "testsrc2=s=320x240:r=60:d=2", "-c:v", "libx264", "-pix_fmt", "yuv420p",
        ])
        return "sixty.mp4"
    }

    /// 2 s in MPEG-TS: a container the player leaves to FFmpeg.
    public func transportStream() async throws -> String {
        try await ffmpeg("clip.ts", ["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=2", "-c:v", "libx264", "-pix_fmt", "yuv420p"])
        return "clip.ts"
    }

    /// 2 s of picture with a `hertz` tone encoded with `codec` (aac, libopus, libmp3lame) into `container` (mp4,
    /// webm, mkv); Opus and AAC start with priming samples the decoder leaves out.
    public func toneClip(hertz: Int, codec: String, container: String, seconds: Int = 2) async throws -> String {
        let name = "tone-\(codec)-\(seconds)s.\(container)"
        let video = container == "webm" ? ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"]
            : ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "ultrafast"]
        try await ffmpeg(name, [
            "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=\(seconds)",
            "-f", "lavfi", "-i", "sine=f=\(hertz):d=\(seconds):sample_rate=44100",
        ] + video + ["-c:a", codec, "-b:a", "64k", "-shortest"])
        return name
    }

    /// `seconds` of black picture with a white frame and a 1 kHz beep (0.1 s) at the same instant every second
    /// from 1 s on: what lines a picture up with its sound. `hevc` encodes the picture as HEVC (slower to decode
    /// first), else H.264; `size` is the picture's.
    public func flashesAndBeeps(
        seconds: Int = 5, hevc: Bool = false, size: String = "160x120", fromZero: Bool = false
    ) async throws -> String {
        let name = (hevc ? "flash-beep-hevc" : "flash-beep") + (fromZero ? "-0.mp4" : ".mp4")
        // From the first second on, or (`fromZero`) from the story's very first frame and sample.
        let first = fromZero ? 0 : 1
        let video = hevc
            ? ["-c:v", "libx265", "-tag:v", "hvc1", "-x265-params", "log-level=error", "-preset", "ultrafast"]
            : ["-c:v", "libx264", "-preset", "ultrafast"]
        try await ffmpeg(name, [
            "-f", "lavfi", "-i",
            "color=black:s=\(size):r=25:d=\(seconds),geq=lum='if(gte(T,\(first))*lt(mod(T,1),0.04),235,16)':cb=128:cr=128",
            "-f", "lavfi", "-i",
            "aevalsrc='if(gte(t,\(first))*lt(mod(t,1),0.1),0.5*sin(2*PI*1000*t),0)':s=48000:d=\(seconds)",
        ] + video + [
            "-pix_fmt", "yuv420p", "-g", "25", "-c:a", "aac", "-b:a", "96k", "-shortest", "-movflags", "+faststart",
        ])
        return name
    }
}
