import CFFmpeg

/// FFmpeg's libraries, which are loaded the first time something is decoded.
public enum MediaLibraries {
    /// Starts loading the decoding libraries on a thread of their own and returns at once, so that a program about to
    /// play does its other start-up work while they load (40-80 ms) instead of before its first frame.
    public static func loadSoon() {
        stories_ffmpeg_load_soon()
    }
}
