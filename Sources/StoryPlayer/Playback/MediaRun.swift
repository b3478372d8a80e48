import Foundation
import NIOConcurrencyHelpers

/// The run of bytes a player downloads and its decoder reads, shared by both. An HLS story may move to another
/// variant from a segment on; that part and every later one are replaced together, and only while the decoder has
/// not read into them, so the demuxer never sees a segment of one variant end in bytes of another.
final class MediaRun: Sendable {
    private struct State {
        var parts: MediaParts
        /// The part the decoder read from last (-1: none yet). Not the furthest: the demuxer may look further
        /// on and come back, and a part it left behind is read afresh when it gets there.
        var decoderAt = -1
    }
    private let state: NIOLockedValueBox<State>

    /// A run of `parts`.
    init(_ parts: MediaParts) { state = NIOLockedValueBox(State(parts: parts)) }

    /// The parts as they are now.
    var parts: MediaParts { state.withLockedValue { $0.parts } }

    /// The part the decoder reads at run offset `offset`, which (with the ones before it) then can no longer be
    /// replaced until the decoder reads elsewhere; nil past the end.
    func partForDecoder(at offset: Int64) -> MediaParts.Part? {
        state.withLockedValue { s in
            guard let index = s.parts.index(containing: offset) else { return nil }
            s.decoderAt = index
            return s.parts.parts[index]
        }
    }

    /// Replaces the parts from `index` on with `pieces`; false (nothing changed) while the decoder reads there or
    /// further on.
    func replace(from index: Int, with pieces: [MediaParts.Piece]) -> Bool {
        state.withLockedValue { s in
            guard index > s.decoderAt, index <= s.parts.parts.count else { return false }
            s.parts = s.parts.replacing(from: index, with: pieces)
            return true
        }
    }
}
