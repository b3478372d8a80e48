/// One decoded picture, scaled for display: RGB, 3 bytes a pixel, rows top to bottom. Displays get this, never the
/// decoder's own types.
public struct VideoFrame: Sendable, Equatable {
    /// Pixels across.
    public let width: Int
    /// Pixels down.
    public let height: Int
    /// `width * height * 3` bytes: red, green, blue per pixel.
    public let rgb: [UInt8]
    /// Presentation time in seconds from the start of the video.
    public let time: Double

    /// A frame; `rgb` must hold `width * height * 3` bytes (missing pixels read as black).
    public init(width: Int, height: Int, rgb: [UInt8], time: Double) {
        self.width = Swift.max(0, width)
        self.height = Swift.max(0, height)
        self.rgb = rgb
        self.time = time
    }

    /// The pixel at column `x`, row `y` (black outside the frame).
    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        guard x >= 0, y >= 0, x < width, y < height else { return (0, 0, 0) }
        let index = (y * width + x) * 3
        guard index + 2 < rgb.count else { return (0, 0, 0) }
        return (rgb[index], rgb[index + 1], rgb[index + 2])
    }

    /// The largest size with the video's aspect ratio that fits `box` (in square pixels), at least 1×1.
    public static func fitted(videoWidth: Int, videoHeight: Int, box: (width: Int, height: Int)) -> (width: Int, height: Int) {
        guard videoWidth > 0, videoHeight > 0, box.width > 0, box.height > 0 else { return (1, 1) }
        let scale = Swift.min(Double(box.width) / Double(videoWidth), Double(box.height) / Double(videoHeight))
        let width = Swift.max(1, Swift.min(box.width, Int((Double(videoWidth) * scale).rounded())))
        let height = Swift.max(1, Swift.min(box.height, Int((Double(videoHeight) * scale).rounded())))
        return (width, height)
    }
}

/// Counts of a story's frames: shown at their time, and dropped because a later one was already due.
public struct FrameCounts: Sendable, Equatable {
    /// Frames put on screen.
    public var shown = 0
    /// Frames decoded too late to be shown (never queued).
    public var dropped = 0
    /// Frames left out on purpose to show a fast video at an even cadence (every second frame of 60 fps).
    public var skipped = 0

    /// Counts.
    public init(shown: Int = 0, dropped: Int = 0, skipped: Int = 0) {
        self.shown = shown
        self.dropped = dropped
        self.skipped = skipped
    }
}

/// Which frames of a video are shown: every frame up to 30 a second, and above that every second (or n-th) frame,
/// so a 60 fps story is shown at an even 30 fps instead of beating against the screen's redraws.
public struct FrameCadence: Sendable, Equatable {
    /// Frames a second the video declares (nil: unknown, every frame shown).
    public let framesPerSecond: Double?
    /// Every `step`-th frame is shown.
    public let step: Int

    /// The most frames a second put on a terminal.
    public static let maxShownPerSecond = 30.0

    /// The cadence for a video of `framesPerSecond`.
    public init(framesPerSecond: Double?) {
        self.framesPerSecond = framesPerSecond
        guard let fps = framesPerSecond, fps.isFinite, fps > 0 else {
            step = 1
            return
        }
        step = Swift.max(1, Int((fps / Self.maxShownPerSecond - 0.01).rounded(.up)))
    }

    /// Seconds between frames shown (nil when the rate is unknown).
    public var interval: Double? { framesPerSecond.map { Double(step) / $0 } }

    /// True when the frame at media time `time` is one that is shown.
    public func shows(_ time: Double) -> Bool {
        guard step > 1, let fps = framesPerSecond else { return true }
        let index = Int((time * fps).rounded())
        return index % step == 0
    }
}
