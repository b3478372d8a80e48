import CFFmpeg
import Foundation
import MediaCache

/// Decodes a story's video and sound on a thread of its own (libav calls block), from one demuxer, and keeps the
/// frame for the playhead: the player moves the target time, the decoder decodes up to it, shows the last frame
/// that is due and drops the ones a later frame overtook (never queued). Sound is decoded a little ahead of the
/// playhead into a `SoundQueue` the sound output reads. Every byte comes through `MediaLoader`.
// Sendable: `Shared` is touched only with `condition` held; libav objects belong to the decoder's thread.
public final class MediaDecoder: @unchecked Sendable {
    struct Shared {
        var target: Double = 0
        var seekTarget: Double?
        var box: (width: Int, height: Int)
        var stopped = false
        var frame: VideoFrame?
        var counts = FrameCounts()
        var failure: VideoDecodeError?
        /// The cadence frames are shown at, once the stream is open.
        var cadence: FrameCadence?
        /// Bumped by every change the thread must look at.
        var wake = 0
        /// The story's sound, once the file is open and when it has sound that is decoded.
        var sound: SoundQueue?
        /// True once the file is open (whether it has sound is known).
        var opened = false
        /// The stream time that is the story's zero, once open.
        var timeOrigin: Double?
        /// The file's subtitle tracks as far as the demuxer has read.
        var subtitleTracks: [CaptionTrack] = []
        /// The time of the next frame to show, once decoded.
        var upcoming: Double?
    }

    private let source: PartsByteSource
    private let media: MediaRun
    /// What sound is resampled to; nil: sound is not decoded.
    private let soundFormat: SoundFormat?
    /// False: only the sound is decoded (no picture is shown).
    public let decodesPictures: Bool
    /// Told the time of each new picture as it becomes the one shown (on the decoding thread).
    private let onFrame: (@Sendable (Double) -> Void)?
    /// Decodes at a lower priority than playback (a first frame decoded ahead of its story's turn).
    private let background: Bool
    /// Told (on the decoding thread) when the player has something new to look at: the file opened or failed,
    /// the first frame, the next frame's time.
    private let onChange: (@Sendable () -> Void)?
    private let condition = NSCondition()
    private var shared: Shared

    /// A decoder of `url` (cached under `key`, `length` bytes), scaling frames to fit `box` pixels (a cell of the
    /// stories screen is two pixels tall).
    /// `soundFormat`: decode the sound too, resampled to it.
    public convenience init(
        loader: MediaLoader, url: URL, key: CacheKey, length: Int64, box: (width: Int, height: Int),
        soundFormat: SoundFormat? = nil, pictures: Bool = true
    ) {
        self.init(
            loader: loader, run: MediaRun(MediaParts(url: url, key: key, length: length)), box: box,
            soundFormat: soundFormat, pictures: pictures)
    }

    /// A decoder of the run of bytes `run` (an HLS story's segments one after another, which may switch variant).
    init(
        loader: MediaLoader, run: MediaRun, box: (width: Int, height: Int), soundFormat: SoundFormat? = nil,
        pictures: Bool = true, onFrame: (@Sendable (Double) -> Void)? = nil, background: Bool = false,
        onChange: (@Sendable () -> Void)? = nil
    ) {
        self.background = background
        self.onChange = onChange
        self.onFrame = onFrame
        media = run
        self.soundFormat = soundFormat
        decodesPictures = pictures
        source = PartsByteSource(loader: loader, run: run)
        shared = Shared(box: box)
    }

    deinit { stop() }

    /// Starts decoding on a new thread; the first frame is ready when `frame` is non-nil.
    public func start() {
        guard !locked({ $0.stopped }) else { return }
        let thread = Thread { [self] in
            // Yields the cores to the playing story's threads: nice 10 for this thread alone (on Linux the nice
            // value belongs to the thread, and `who` 0 is the calling one).
            if background { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10) }
            run()
        }
        thread.name = "stories-tui.video"
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Stops the thread (a blocked read is woken); the last frame stays readable.
    public func stop() {
        changing { $0.stopped = true }
        source.cancel()
    }

    /// Shows the frame due at `seconds` next.
    public func show(at seconds: Double) {
        changing { s in
            s.target = seconds
        }
    }

    /// Jumps to `seconds`: decoding restarts at the key frame before it, and the frame at it is shown.
    public func seek(to seconds: Double) {
        changing { s in
            s.seekTarget = seconds
            s.target = seconds
        }
    }

    /// Fits later frames to `box` pixels.
    public func resize(to box: (width: Int, height: Int)) {
        changing { s in
            s.box = box
        }
    }

    /// The frame on screen now, nil until the first is decoded.
    public var frame: VideoFrame? { locked { $0.frame } }
    /// Frames shown and dropped so far.
    public var counts: FrameCounts { locked { $0.counts } }
    /// The cadence frames are shown at, once the video is open.
    public var cadence: FrameCadence? { locked { $0.cadence } }
    /// Why decoding failed, if it did.
    public var failure: VideoDecodeError? { locked { $0.failure } }
    /// Bytes the decoder read through the loader.
    public var bytesRead: Int64 { source.bytesRead }
    /// The story's decoded sound: nil until the file is open, and when it has none (or sound is not decoded).
    public var sound: SoundQueue? { locked { $0.sound } }
    /// The time of the next frame to show, once it is decoded: when the player's next tick is due.
    public var upcoming: Double? { locked { $0.upcoming } }
    /// True once the file is open: `sound` then says whether the story has sound.
    public var isOpen: Bool { locked { $0.opened } }
    /// The subtitle tracks inside the file, with the cues the demuxer has passed so far.
    public var subtitleTracks: [CaptionTrack] { locked { $0.subtitleTracks } }

    /// The stream time, in seconds, that is the story's zero (nil until open, or when it could not open).
    public var timeOrigin: Double? { locked { $0.timeOrigin } }

    private func locked<T>(_ body: (inout Shared) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&shared)
    }

    /// Changes what the decoding thread works towards and wakes it.
    private func changing(_ body: (inout Shared) -> Void) {
        condition.lock()
        defer { condition.unlock() }
        body(&shared)
        shared.wake &+= 1
        condition.broadcast()
    }

    /// Waits until something changed since `seen` (or the decoder was stopped); returns the state then.
    private func waitForChange(since seen: Int) -> Shared {
        condition.lock()
        defer { condition.unlock() }
        while shared.wake == seen, !shared.stopped { condition.wait() }
        return shared
    }

    private func run() {
        do {
            let reader = try FrameReader(source: source, soundFormat: soundFormat, pictures: decodesPictures)
            reader.onSubtitles = { [weak self] tracks in
                self?.locked { $0.subtitleTracks = tracks }
                self?.onChange?()
            }
            // The device's reads ask for more sound as they use it up: never later than the player's next tick.
            let sound = reader.sound.map { _ in
                SoundQueue(format: soundFormat ?? .standard, lowWater: Self.soundAhead * 0.6) { [weak self] in
                    self?.changing { _ in }
                }
            }
            locked { s in
                s.sound = sound
                s.opened = true
                s.timeOrigin = reader.timeOrigin
            }
            onChange?()
            try decodeLoop(reader, sound: sound)
        } catch {
            let stopped = locked { $0.stopped }
            guard !stopped else { return }
            let failure = (error as? VideoDecodeError) ?? VideoDecodeError("cannot read the video: \(error)")
            locked { s in
                s.failure = failure
                s.opened = true
            }
            onChange?()
        }
    }

    private func decodeLoop(_ reader: FrameReader, sound: SoundQueue?) throws {
        let cadence = FrameCadence(framesPerSecond: reader.framesPerSecond)
        locked { $0.cadence = cadence }
        guard let pending = av_frame_alloc(), let due = av_frame_alloc(), let shown = av_frame_alloc() else {
            throw VideoDecodeError("out of memory")
        }
        var pendingFrame: UnsafeMutablePointer<AVFrame>? = pending
        var dueFrame: UnsafeMutablePointer<AVFrame>? = due
        // The decoded frame on screen, kept to convert again when the box changes (a still, a pause, the first
        // frame before the picture's exact size was known).
        var shownFrame: UnsafeMutablePointer<AVFrame>? = shown
        var shownBox: (width: Int, height: Int)?
        var shownTime = 0.0
        defer {
            av_frame_free(&pendingFrame)
            av_frame_free(&dueFrame)
            av_frame_free(&shownFrame)
        }
        var pendingTime: Double?
        var ended = false
        var skippingTo: Double?
        var sequence = 0
        var seen = -1
        var lookAgain = false
        var soundOver = sound == nil
        while true {
            // Right after the first frame the target may already be further on: look again before waiting.
            let state = lookAgain ? locked { $0 } : waitForChange(since: seen)
            lookAgain = false
            seen = state.wake
            if state.stopped { return }
            if let seek = state.seekTarget {
                locked { s in if s.seekTarget == seek { s.seekTarget = nil } }
                // An HLS story restarts at the segment holding the target (it starts with a key frame); a file
                // seeks by time, the demuxer finding the key frame.
                if case .segments = media.parts.timing {
                    source.waitForTime(seek)
                    try reader.seek(toByte: media.parts.readOffset(at: seek))
                } else {
                    try reader.seek(to: seek)
                }
                av_frame_unref(pending)
                pendingTime = nil
                ended = false
                skippingTo = seek
                sound?.reset()
                soundOver = false
            }
            // Decode up to the target: the last frame due wins, frames it overtook are dropped.
            let target = state.target
            var dueTime: Double?
            var dropped = 0
            var skipped = 0
            while !ended, decodesPictures {
                if pendingTime == nil {
                    // Sound before each picture decoded: a decoder catching up on pictures (a busy machine) never
                    // lets the device run dry; pictures it cannot keep up with are dropped, as they are when the
                    // playhead overtakes them. A picture already decoded is shown first, on time.
                    if let sound, !soundOver { soundOver = decodeSound(reader, into: sound, around: target) }
                    pendingTime = try reader.decode(into: pending)
                    if pendingTime == nil {
                        ended = true
                        break
                    }
                    // Off the cadence: left out, so what is shown keeps an even beat (never the first frame).
                    if let time = pendingTime, sequence > 0 || dueTime != nil, !cadence.shows(time) {
                        av_frame_unref(pending)
                        pendingTime = nil
                        skipped += 1
                        continue
                    }
                }
                guard let time = pendingTime, time <= target + Self.tolerance || (sequence == 0 && dueTime == nil)
                else { break }
                if dueTime != nil, skippingTo == nil { dropped += 1 }
                av_frame_unref(due)
                av_frame_move_ref(due, pending)
                dueTime = time
                pendingTime = nil
                if sequence == 0 { break }  // the first frame is shown as soon as it is decoded
            }
            if sequence > 0 { skippingTo = nil }
            if let time = dueTime {
                sequence += 1
                lookAgain = sequence == 1
                let box = locked { $0.box }
                // The frame's own size: an HLS story's picture changes size where it switches variant.
                let picture = reader.picture(due, box: box, time: time)
                av_frame_unref(shown)
                av_frame_move_ref(shown, due)
                shownBox = box
                shownTime = time
                locked { s in
                    s.frame = picture
                    s.counts.shown += 1
                    s.counts.dropped += dropped
                    s.counts.skipped += skipped
                }
                onFrame?(time)
            } else {
                if skipped > 0 { locked { $0.counts.skipped += skipped } }
                let box = locked { $0.box }
                if let previous = shownBox, previous != box {
                    let picture = reader.picture(shown, box: box, time: shownTime)
                    shownBox = box
                    locked { $0.frame = picture }
                }
            }
            let next = pendingTime
            let changed = locked { s in
                defer { s.upcoming = next }
                return s.upcoming != next
            }
            if changed || sequence == 1 && dueTime != nil { onChange?() }
            if let sound, !soundOver { soundOver = decodeSound(reader, into: sound, around: target) }
        }
    }

    /// Seconds of sound decoded ahead of what the device was given (and of the playhead): the device runs dry only
    /// when the bytes are not there.
    static let soundAhead = 0.5

    /// Decodes sound until `soundAhead` past the playhead `target` or the device's read cursor, whichever is
    /// later, and forgets what is well behind the playhead; true when the sound is over (its end, or data its
    /// decoder cannot read: the story goes on without it).
    private func decodeSound(_ reader: FrameReader, into sound: SoundQueue, around target: Double) -> Bool {
        sound.trim(before: target - 1)
        let from = Swift.max(target, sound.readThrough ?? target)
        do {
            while (sound.decodedThrough ?? -.infinity) < from + Self.soundAhead {
                guard let stream = reader.sound, try stream.decode(from: reader, into: sound) else {
                    sound.markEnded()
                    return true
                }
            }
        } catch {
            sound.markEnded()
            return true
        }
        return false
    }

    /// A frame is due this close before its time (half a millisecond of rounding in the playhead).
    static let tolerance = 0.0005
}
