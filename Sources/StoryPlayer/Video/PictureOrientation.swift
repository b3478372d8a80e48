import Foundation

/// How a decoded picture is turned to be shown upright: mirrored left to right first (when `mirrored`), then
/// turned clockwise by `quarterTurns` × 90°. Phones record portrait video as landscape pictures with a display
/// matrix that says so; photos carry an EXIF orientation.
public struct PictureOrientation: Sendable, Equatable {
    /// Clockwise quarter turns, 0...3.
    public var quarterTurns: Int
    /// Mirrored left to right before turning.
    public var mirrored: Bool

    /// An orientation; `quarterTurns` is taken modulo 4.
    public init(quarterTurns: Int = 0, mirrored: Bool = false) {
        self.quarterTurns = ((quarterTurns % 4) + 4) % 4
        self.mirrored = mirrored
    }

    /// Shown as decoded.
    public static let upright = PictureOrientation()

    /// True when the shown picture's width is the decoded one's height.
    public var swapsSides: Bool { quarterTurns % 2 == 1 }

    /// The orientation a display matrix asks for (FFmpeg's layout: nine 32-bit values, the first two columns in
    /// 16.16 fixed point). A matrix that mirrors has a negative determinant; its angle is read after undoing the
    /// mirror, and snapped to the nearest quarter turn.
    public init(displayMatrix m: [Int32]) {
        guard m.count >= 9 else {
            self = .upright
            return
        }
        var a = Double(m[0]) / 65536, b = Double(m[1]) / 65536
        var c = Double(m[3]) / 65536
        let d = Double(m[4]) / 65536
        let mirrored = a * d - b * c < 0
        if mirrored {
            a = -a
            c = -c
        }
        // FFmpeg's av_display_rotation_get is the counter-clockwise angle; the picture is turned back clockwise.
        let scaleX = (a * a + c * c).squareRoot(), scaleY = (b * b + d * d).squareRoot()
        guard scaleX > 0, scaleY > 0 else {
            self = .upright
            return
        }
        let counterClockwise = -atan2(b / scaleY, a / scaleX) * 180 / .pi
        let clockwise = -counterClockwise
        self.init(quarterTurns: Int((clockwise / 90).rounded()), mirrored: mirrored)
    }

    /// The orientation an EXIF Orientation tag (1...8) asks for; anything else is upright.
    public init(exif value: Int) {
        switch value {
        case 2: self.init(quarterTurns: 0, mirrored: true)
        case 3: self.init(quarterTurns: 2)
        case 4: self.init(quarterTurns: 2, mirrored: true)
        case 5: self.init(quarterTurns: 3, mirrored: true)
        case 6: self.init(quarterTurns: 1)
        case 7: self.init(quarterTurns: 1, mirrored: true)
        case 8: self.init(quarterTurns: 3)
        default: self.init()
        }
    }

    /// `rgb` (`width`×`height`, 3 bytes a pixel) turned this way; the result is `height`×`width` when
    /// `swapsSides`.
    public func apply(to rgb: [UInt8], width: Int, height: Int) -> [UInt8] {
        guard self != .upright, width > 0, height > 0, rgb.count >= width * height * 3 else { return rgb }
        let outWidth = swapsSides ? height : width
        var out = [UInt8](repeating: 0, count: width * height * 3)
        rgb.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                for y in 0..<height {
                    for x in 0..<width {
                        let sx = mirrored ? width - 1 - x : x
                        let (tx, ty): (Int, Int)
                        switch quarterTurns {
                        case 1: (tx, ty) = (height - 1 - y, sx)
                        case 2: (tx, ty) = (width - 1 - sx, height - 1 - y)
                        case 3: (tx, ty) = (y, width - 1 - sx)
                        default: (tx, ty) = (sx, y)
                        }
                        let from = (y * width + x) * 3, to = (ty * outWidth + tx) * 3
                        target[to] = source[from]
                        target[to + 1] = source[from + 1]
                        target[to + 2] = source[from + 2]
                    }
                }
            }
        }
        return out
    }
}
