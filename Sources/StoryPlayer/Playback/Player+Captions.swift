import Foundation
import MediaFormats

extension Player {
    /// The captions chosen for this story (nil: none, or not read yet).
    public var captions: CaptionTrack? { words.chosen }

    /// What the captions show at the playhead now.
    public var captionShown: CaptionShown? {
        guard let track = captions else { return nil }
        return CaptionShown(track, at: status.position)
    }
}
