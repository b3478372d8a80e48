import Foundation
import MediaFormats
import Testing

@testable import StoryPlayer

/// SubRip and WebVTT read as a viewer would want them: every cue that can be read, markup gone, bad input passed
/// over, and the track picking what shows at each moment of the story.
@Suite struct CaptionDocumentTests {
    @Test func subRipWithCountersCarriageReturnsAndMarkup() {
        let text = "\u{FEFF}1\r\n00:00:00,500 --> 00:00:01,200\r\n<i>Off screen</i>\r\n\r\n2\r\n00:00:01,500 --> 00:00:02,500\r\n{\\an8}<font color=\"red\">Two</font> &amp; more\r\nlines\r\n\r\n"
        let cues = CaptionDocument.parse(Array(text.utf8)).cues
        #expect(cues == [
            CaptionCue(start: 0.5, end: 1.2, text: "Off screen", italic: true),
            CaptionCue(start: 1.5, end: 2.5, text: "Two & more\nlines"),
        ])
    }

    @Test func webVTTWithNotesStylesSettingsAndTimestampMap() {
        let text = """
            WEBVTT
            X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000

            NOTE a comment
            that spans lines

            STYLE
            ::cue { color: yellow }

            intro
            00:01.000 --> 00:02.000 align:start line:90%
            <v Ana>Hello <c.loud>there</c></v>
            00:02.000 --> 00:03.000
            <00:02.500>Karaoke
            """
        let parsed = CaptionDocument.parse(Array(text.utf8))
        #expect(parsed.timestampMap == CaptionDocument.TimestampMap(local: 0, mpegts: 10))
        #expect(parsed.cues.map(\.text) == ["Hello there", "Karaoke"])
        #expect(parsed.cues.map(\.start) == [1, 2])
    }

    @Test func brokenTimingsAreSkippedAndTheRestKept() {
        let text = """
            1
            00:00:01,000 --> 00:00:00,500
            backwards

            2
            00:00:xx,000 --> 00:00:02,000
            garbled

            3
            00:00:03,000 --> 00:00:04,000

            4
            00:00:05,000 --> 00:00:06,000
            kept
            """
        #expect(CaptionDocument.parse(Array(text.utf8)).cues.map(\.text) == ["kept"])
        #expect(CaptionDocument.parse([]).cues.isEmpty)
        #expect(CaptionDocument.parse(Array(repeating: 0xFF, count: 1000)).cues.isEmpty)
    }

    @Test func latin1AndUTF16AreRead() {
        let latin1: [UInt8] = Array("1\n00:00:00,000 --> 00:00:01,000\nna".utf8) + [0xEF, 0x76, 0x65] // "naïve"
        #expect(CaptionDocument.parse(latin1).cues.first?.text == "naïve")
        let text = "1\n00:00:00,000 --> 00:00:01,000\nĀ café\n"
        var little: [UInt8] = [0xFF, 0xFE]
        for unit in text.utf16 { little += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        var big: [UInt8] = [0xFE, 0xFF]
        for unit in text.utf16 { big += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        #expect(CaptionDocument.parse(little).cues.first?.text == "Ā café")
        #expect(CaptionDocument.parse(big).cues.first?.text == "Ā café")
    }

    @Test func aHugeFileIsReadUpToItsLimit() {
        var text = ""
        var n = 0
        while text.utf8.count < 11 << 20 {
            text += "\(n + 1)\n00:00:\(String(format: "%02d", n % 60)),000 --> 00:00:\(String(format: "%02d", n % 60)),500\ncue \(n)\n\n"
            n += 1
        }
        let cues = CaptionDocument.parse(Array(text.utf8)).cues
        #expect(cues.count == CaptionDocument.cueLimit)
    }

    @Test func theTrackShowsOverlappingCuesAndKnowsItsNextChange() {
        let track = CaptionTrack(language: "en", origin: .sidecar, cues: [
            CaptionCue(start: 3, end: 4, text: "later"),
            CaptionCue(start: 1, end: 2.5, text: "first"),
            CaptionCue(start: 2, end: 3, text: "overlap"),
            CaptionCue(start: 10, end: 12, text: "past the end"),
        ])
        #expect(track.cues(at: 0.5).isEmpty)
        #expect(track.cues(at: 1).map(\.text) == ["first"])
        #expect(track.cues(at: 2.2).map(\.text) == ["first", "overlap"])
        #expect(track.cues(at: 3).map(\.text) == ["later"])
        #expect(track.cues(at: 4).isEmpty)
        #expect(track.nextChange(after: 0) == 1)
        #expect(track.nextChange(after: 1.5) == 2)
        #expect(track.nextChange(after: 2.2) == 2.5)
        #expect(track.nextChange(after: 12) == nil)
        let shown = CaptionShown(track, at: 2.2)
        #expect(shown?.text == "first\noverlap" && shown?.start == 1 && shown?.end == 3)
    }

    @Test func languagesArePickedInOrderWhateverCodeTheFileUses() {
        let tracks = [
            CaptionTrack(language: "eng", origin: .embedded, cues: []),
            CaptionTrack(language: "de", origin: .sidecar, cues: []),
            CaptionTrack(language: "pt-BR", origin: .sidecar, cues: []),
        ]
        #expect(CaptionTrack.choose(tracks, languages: ["de", "en"])?.language == "de")
        #expect(CaptionTrack.choose(tracks, languages: ["fr", "en"])?.language == "eng")
        #expect(CaptionTrack.choose(tracks, languages: ["pt"])?.language == "pt-BR")
        #expect(CaptionTrack.choose(tracks, languages: [])?.language == "eng")
        #expect(CaptionTrack.choose([], languages: ["en"]) == nil)
    }

    @Test func sidecarsAreFoundBesideTheFileWithTheirLanguages() {
        let file = URL(fileURLWithPath: "/stories/clip.mp4")
        let found = CaptionLoading.sidecars(
            of: file, among: ["clip.mp4", "clip.srt", "clip.en.vtt", "clip.pt-BR.srt", "clip.final.srt", "clip2.srt", "other.vtt"])
        #expect(found.map(\.language) == ["en", "pt-BR", nil])
        #expect(found.map { if case .local(_, let url) = $0.location { return url.lastPathComponent } else { return "" } }
            == ["clip.en.vtt", "clip.pt-BR.srt", "clip.srt"])
    }
}
