import CSoundOutput
import Foundation

/// The shape of the sound a player writes: interleaved signed 16-bit frames.
public struct SoundFormat: Sendable, Equatable {
    /// Frames a second.
    public var rate: Int
    /// Channels per frame.
    public var channels: Int

    /// What stories are resampled to: 48 kHz stereo (what phones record and desktops mix at).
    public static let standard = SoundFormat(rate: 48_000, channels: 2)

    /// A format.
    public init(rate: Int, channels: Int) {
        self.rate = rate
        self.channels = channels
    }
}

/// Why there is no sound, as one line for the screen.
public struct SoundError: Error, CustomStringConvertible, Equatable {
    /// What went wrong.
    public let description: String
    /// An error.
    public init(_ description: String) { self.description = description }
}

/// Where sound goes: a device, or a test's recorder. `write` blocks until the frames were taken (that paces the
/// output at the device's rate); `delay` says how long the next frame written takes to be heard.
public protocol SoundSink: AnyObject, Sendable {
    /// What the sink takes.
    var format: SoundFormat { get }
    /// What it is, for the screen ("PulseAudio").
    var name: String { get }
    /// Writes interleaved frames, blocking until the sink took them.
    func write(_ samples: UnsafeBufferPointer<Int16>) throws(SoundError)
    /// Seconds from now until the next frame written is heard (what the sink holds, plus the device's latency).
    var delay: Double { get }
    /// Drops what was written and not heard yet.
    func flush()
    /// Closes the sink; nothing is written after.
    func close()
}

/// Which sound library to use.
public enum SoundBackend: String, Sendable, CaseIterable {
    /// PulseAudio (or PipeWire through it), else ALSA.
    case auto
    /// PulseAudio's client library only.
    case pulse
    /// ALSA only.
    case alsa
}

/// The system's sound device through PulseAudio's simple API or ALSA (see CSoundOutput).
// Sendable: one thread, the sound output's, uses it from open to close.
public final class SystemSoundSink: SoundSink, @unchecked Sendable {
    // Used by the output's one thread only; `close` is called by it too.
    private var sound: OpaquePointer?
    public let format: SoundFormat
    public let name: String

    /// Opens the device (blocking: a server that does not answer can take seconds) holding `latencyMs` of sound:
    /// enough for a busy machine's scheduler (PulseAudio spends about half of it in the device, so the stream
    /// itself rides out stalls of ~150 ms), and free to be long: cuts flush it, a story's first sound is not queued
    /// behind silence, and the audio clock counts the delay.
    public init(backend: SoundBackend = .auto, format: SoundFormat = .standard, latencyMs: Int = 300) throws(SoundError) {
        var why = [CChar](repeating: 0, count: 512)
        let code: Int32 = switch backend {
        case .auto: Int32(STORIES_SOUND_AUTO)
        case .pulse: Int32(STORIES_SOUND_PULSE)
        case .alsa: Int32(STORIES_SOUND_ALSA)
        }
        guard let sound = stories_sound_open(
            code, "stories-tui", UInt32(format.rate), UInt32(format.channels), UInt32(latencyMs), &why, why.count)
        else { throw SoundError(Self.text(why)) }
        self.sound = sound
        self.format = format
        name = String(cString: stories_sound_backend(sound))
    }

    deinit { close() }

    public func write(_ samples: UnsafeBufferPointer<Int16>) throws(SoundError) {
        guard let sound, let base = samples.baseAddress else { return }
        var why = [CChar](repeating: 0, count: 256)
        if stories_sound_write(sound, base, samples.count / format.channels, &why, why.count) != 0 {
            throw SoundError(Self.text(why))
        }
    }

    public var delay: Double {
        guard let sound else { return 0 }
        let microseconds = stories_sound_delay_us(sound)
        return microseconds < 0 ? 0 : Double(microseconds) / 1e6
    }

    public func flush() {
        if let sound { stories_sound_flush(sound) }
    }

    public func close() {
        stories_sound_close(sound)
        sound = nil
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
