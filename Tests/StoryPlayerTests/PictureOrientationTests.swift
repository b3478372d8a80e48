import Foundation
import Testing

@testable import StoryPlayer

/// Turning pictures upright and the cadence of fast videos, as plain values.
@Suite struct PictureOrientationTests {
    /// A 16.16 display matrix as FFmpeg lays it out (a, b, u, c, d, v, x, y, w).
    static func matrix(_ a: Int32, _ b: Int32, _ c: Int32, _ d: Int32) -> [Int32] {
        [a << 16, b << 16, 0, c << 16, d << 16, 0, 0, 0, 1 << 30]
    }

    @Test func displayMatricesAsPhonesWriteThemTurnThePictureBack() {
        #expect(PictureOrientation(displayMatrix: Self.matrix(1, 0, 0, 1)) == .upright)
        #expect(PictureOrientation(displayMatrix: Self.matrix(0, 1, -1, 0)) == PictureOrientation(quarterTurns: 1))
        #expect(PictureOrientation(displayMatrix: Self.matrix(-1, 0, 0, -1)) == PictureOrientation(quarterTurns: 2))
        #expect(PictureOrientation(displayMatrix: Self.matrix(0, -1, 1, 0)) == PictureOrientation(quarterTurns: 3))
        // A mirrored matrix (negative determinant): mirrored, and the turn read after undoing the mirror.
        #expect(PictureOrientation(displayMatrix: Self.matrix(-1, 0, 0, 1)) == PictureOrientation(quarterTurns: 0, mirrored: true))
        #expect(PictureOrientation(displayMatrix: Self.matrix(0, 1, 1, 0)) == PictureOrientation(quarterTurns: 1, mirrored: true))
        #expect(PictureOrientation(displayMatrix: [1, 2, 3]) == .upright, "too short: upright")
        #expect(PictureOrientation(displayMatrix: Self.matrix(0, 0, 0, 0)) == .upright, "degenerate: upright")
    }

    @Test func exifOrientationsMapToTurnsAndMirrors() {
        let expected: [Int: PictureOrientation] = [
            1: .upright, 2: PictureOrientation(mirrored: true), 3: PictureOrientation(quarterTurns: 2),
            4: PictureOrientation(quarterTurns: 2, mirrored: true), 5: PictureOrientation(quarterTurns: 3, mirrored: true),
            6: PictureOrientation(quarterTurns: 1), 7: PictureOrientation(quarterTurns: 1, mirrored: true),
            8: PictureOrientation(quarterTurns: 3), 0: .upright, 9: .upright,
        ]
        for (value, orientation) in expected { #expect(PictureOrientation(exif: value) == orientation, "\(value)") }
    }

    /// A 3×2 picture whose pixels are numbered 0...5 (red channel), row by row.
    static let numbered: [UInt8] = (0..<6).flatMap { [UInt8($0), 0, 0] }

    static func reds(_ rgb: [UInt8]) -> [UInt8] { stride(from: 0, to: rgb.count, by: 3).map { rgb[$0] } }

    @Test func turningAndMirroringMovePixelsWhereTheyBelong() {
        // 0 1 2      turned clockwise:  3 0      mirrored:  2 1 0
        // 3 4 5                         4 1                 5 4 3
        //                               5 2
        let clockwise = PictureOrientation(quarterTurns: 1).apply(to: Self.numbered, width: 3, height: 2)
        #expect(Self.reds(clockwise) == [3, 0, 4, 1, 5, 2])
        #expect(Self.reds(PictureOrientation(quarterTurns: 2).apply(to: Self.numbered, width: 3, height: 2)) == [5, 4, 3, 2, 1, 0])
        #expect(Self.reds(PictureOrientation(quarterTurns: 3).apply(to: Self.numbered, width: 3, height: 2)) == [2, 5, 1, 4, 0, 3])
        #expect(Self.reds(PictureOrientation(mirrored: true).apply(to: Self.numbered, width: 3, height: 2)) == [2, 1, 0, 5, 4, 3])
        // EXIF 5 is a transpose: (x, y) goes to (y, x).
        #expect(Self.reds(PictureOrientation(exif: 5).apply(to: Self.numbered, width: 3, height: 2)) == [0, 3, 1, 4, 2, 5])
        #expect(PictureOrientation.upright.apply(to: Self.numbered, width: 3, height: 2) == Self.numbered)
    }

    @Test func fastVideosAreShownAtAnEvenFractionOfTheirRate() {
        #expect(FrameCadence(framesPerSecond: 30).step == 1)
        #expect(FrameCadence(framesPerSecond: 29.97).step == 1)
        #expect(FrameCadence(framesPerSecond: 25).step == 1)
        #expect(FrameCadence(framesPerSecond: 60).step == 2)
        #expect(FrameCadence(framesPerSecond: 59.94).step == 2)
        #expect(FrameCadence(framesPerSecond: 50).step == 2)
        #expect(FrameCadence(framesPerSecond: 120).step == 4)
        #expect(FrameCadence(framesPerSecond: nil).step == 1)
        let sixty = FrameCadence(framesPerSecond: 60)
        #expect(abs((sixty.interval ?? 0) - 1.0 / 30) < 1e-9)
        let shown = (0..<12).filter { sixty.shows(Double($0) / 60) }
        #expect(shown == [0, 2, 4, 6, 8, 10])
        #expect((0..<12).allSatisfy { FrameCadence(framesPerSecond: 30).shows(Double($0) / 30) })
    }
}
