import Foundation
import MediaFormats

/// Where a story's first picture can be read from without a demuxer.
enum FirstPictureSource: Sendable, Equatable {
    /// An MP4 whose `moov` box is at this range.
    case mp4(moov: Range<Int64>)
    /// A photo, decoded whole.
    case photo(FirstPicture)
}

extension Player {
    /// Largest MP4 header read again for its first picture (a longer one is left to the decoder).
    static let firstPictureHeaderLimit: Int64 = 4 << 20

    /// Decodes the story's first picture (an MP4's from its header and first sample, a photo's from the file) with
    /// the decoders alone, beside `decoder` (a photo's starts once this task ends), and holds it until `decoder`
    /// has its own: at launch FFmpeg's demuxers load after its decoders, and the first frame need not wait for them.
    /// Nothing happens when the decoder is first, or when the file's first picture does not decode alone.
    func showFirstPictureEarly(
        _ source: FirstPictureSource, box: (width: Int, height: Int), decoder: MediaDecoder
    ) -> Task<Void, Never>? {
        if case .mp4(let moov) = source, moov.count > Self.firstPictureHeaderLimit { return nil }
        let reader = LoaderRangeReader(loader: loader, url: url, key: key)
        return Task { [self] in
            let found: FirstPicture?
            switch source {
            case .mp4(let moov): found = (try? await reader.read(moov)).flatMap { FirstPicture.mp4(moov: $0) }
            case .photo(let picture): found = picture
            }
            guard let picture = found, decoder.frame == nil, let sample = try? await reader.read(picture.sample),
                !Task.isCancelled
            else { return }
            let frame = await withCheckedContinuation { (continuation: CheckedContinuation<VideoFrame?, Never>) in
                // libav calls block: a thread of their own, as the decoder's.
                let thread = Thread { continuation.resume(returning: FirstPictureDecoder.decode(picture, sample: sample, box: box)) }
                thread.name = "stories-tui.first-picture"
                thread.start()
            }
            guard let frame, !Task.isCancelled, decoder.frame == nil else { return }
            hold(frame)
        }
    }
}
