import CChafa
import Foundation
import NIOConcurrencyHelpers

/// A picture turned into cells or a sixel image by libchafa. The last result and chafa's canvas are kept, so the
/// same frame drawn again (the screen is redrawn more often than frames change) costs a comparison.
public enum ChafaPicture {
    /// One cell of a picture: a symbol and its two colours.
    public struct PictureCell: Sendable, Equatable {
        /// The symbol.
        public var character: Character
        /// Its colour (the symbol's set pixels).
        public var foreground: CellPaint?
        /// The colour behind it.
        public var background: CellPaint?
    }

    /// Pixels to draw: packed RGB, row-major.
    public struct Pixels: Sendable, Hashable {
        /// Width.
        public var width: Int
        /// Height.
        public var height: Int
        /// 3 bytes a pixel.
        public var rgb: [UInt8]

        /// Pixels.
        public init(width: Int, height: Int, rgb: [UInt8]) {
            self.width = width
            self.height = height
            self.rgb = rgb
        }
    }

    /// True when libchafa can be loaded (else pictures fall back to this program's own half blocks).
    public static let available: Bool = stories_chafa_load(nil, 0) != 0

    /// Why libchafa is missing, nil when it loaded.
    public static var unavailableReason: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard stories_chafa_load(&buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `pixels` as `columns`×`rows` cells for `output` (its symbols and colours); nil without libchafa.
    public static func cells(_ pixels: Pixels, columns: Int, rows: Int, output: PictureOutput) -> [PictureCell]? {
        let key = Key(columns: columns, rows: rows, output: output, pixelMode: Int32(STORIES_CHAFA_SYMBOLS))
        return memo.withLockedValue { memo -> [PictureCell]? in
            if memo.cellsKey == key, memo.cellsPixels == pixels, let cells = memo.cells { return cells }
            guard let canvas = memo.canvas(for: key) else { return nil }
            let count = columns * rows
            var characters = [UInt32](repeating: 32, count: count)
            var foregrounds = [Int32](repeating: -1, count: count)
            var backgrounds = [Int32](repeating: -1, count: count)
            pixels.rgb.withUnsafeBufferPointer { rgb in
                guard rgb.count >= pixels.width * pixels.height * 3 else { return }
                stories_chafa_draw(canvas, rgb.baseAddress, Int32(pixels.width), Int32(pixels.height), Int32(pixels.width * 3))
            }
            stories_chafa_cells(canvas, &characters, &foregrounds, &backgrounds)
            let truecolor = output.colors == .truecolor
            func paint(_ value: Int32) -> CellPaint? {
                guard value >= 0, output.colors != .none else { return nil }
                return truecolor ? .rgb(UInt32(value)) : .palette(UInt8(truncatingIfNeeded: value))
            }
            let cells = (0..<count).map { i in
                PictureCell(
                    character: Unicode.Scalar(characters[i]).map(Character.init) ?? " ",
                    foreground: paint(foregrounds[i]), background: paint(backgrounds[i]))
            }
            memo.cellsKey = key
            memo.cellsPixels = pixels
            memo.cells = cells
            return cells
        }
    }

    /// `pixels` as a sixel image filling `columns`×`rows` cells of `output.cell` pixels (the DCS sequence, ready to
    /// write at the cursor); nil without libchafa. Its colours are the image's own 256, or with `fixedPalette` (a
    /// video's frames) 240 fixed ones, undithered: half the bytes for some loss in smooth gradients.
    public static func sixel(
        _ pixels: Pixels, columns: Int, rows: Int, output: PictureOutput, fixedPalette: Bool = false
    ) -> [UInt8]? {
        let key = Key(
            columns: columns, rows: rows, output: output, pixelMode: Int32(STORIES_CHAFA_SIXELS),
            fixedPalette: fixedPalette)
        return memo.withLockedValue { memo -> [UInt8]? in
            guard let canvas = memo.canvas(for: key) else { return nil }
            pixels.rgb.withUnsafeBufferPointer { rgb in
                guard rgb.count >= pixels.width * pixels.height * 3 else { return }
                stories_chafa_draw(canvas, rgb.baseAddress, Int32(pixels.width), Int32(pixels.height), Int32(pixels.width * 3))
            }
            var length = 0
            guard let printed = stories_chafa_print(canvas, &length) else { return nil }
            defer { free(printed) }
            return printed.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
        }
    }

    private struct Key: Equatable {
        var columns: Int
        var rows: Int
        var output: PictureOutput
        var pixelMode: Int32
        var fixedPalette = false
    }

    /// chafa's canvases (one for cells, one for sixels) and the last cells made.
    // Sendable: used only inside `memo`'s lock; chafa's canvases are never shared outside it.
    private final class Memo: @unchecked Sendable {
        var canvases: [(key: Key, canvas: OpaquePointer)] = []
        var cellsKey: Key?
        var cellsPixels: Pixels?
        var cells: [PictureCell]?

        func canvas(for key: Key) -> OpaquePointer? {
            if let found = canvases.first(where: { $0.key == key }) { return found.canvas }
            let (colorMode, dither) =
                key.fixedPalette
                ? (Int32(STORIES_CHAFA_INDEXED_240), Int32(STORIES_CHAFA_DITHER_NONE))
                : Self.colors(key.output.colors, pixelMode: key.pixelMode)
            let (symbols, exclude) = Self.symbols(key.output)
            // Colours are matched in a perceptual space for 24-bit cells; against a palette that costs four times
            // as much (38 against 10 ms a 120×30 frame here), so palettes are matched in RGB, as are sixel's.
            let perceptual: Int32 = key.pixelMode == Int32(STORIES_CHAFA_SYMBOLS) && key.output.colors == .truecolor ? 1 : 0
            guard let canvas = stories_chafa_new(
                Int32(key.columns), Int32(key.rows), colorMode, key.pixelMode, symbols, exclude, dither,
                Int32(key.output.cell.width), Int32(key.output.cell.height), perceptual,
                key.pixelMode == Int32(STORIES_CHAFA_SYMBOLS) ? 0.3 : 0)
            else { return nil }
            // One canvas of each kind: the picture's area changes rarely (a resize, the pane).
            if let index = canvases.firstIndex(where: {
                $0.key.pixelMode == key.pixelMode && $0.key.fixedPalette == key.fixedPalette
            }) {
                stories_chafa_free(canvases[index].canvas)
                canvases.remove(at: index)
            }
            canvases.append((key, canvas))
            return canvas
        }

        static func colors(_ depth: ColorDepth, pixelMode: Int32) -> (Int32, Int32) {
            if pixelMode == Int32(STORIES_CHAFA_SIXELS) {
                return (Int32(STORIES_CHAFA_TRUECOLOR), Int32(STORIES_CHAFA_DITHER_NONE))
            }
            switch depth {
            case .truecolor: return (Int32(STORIES_CHAFA_TRUECOLOR), Int32(STORIES_CHAFA_DITHER_NONE))
            // The 16 system colours are themed by users: pictures take the other 240.
            case .palette256: return (Int32(STORIES_CHAFA_INDEXED_240), Int32(STORIES_CHAFA_DITHER_ORDERED))
            case .palette16: return (Int32(STORIES_CHAFA_INDEXED_16), Int32(STORIES_CHAFA_DITHER_ORDERED))
            case .none: return (Int32(STORIES_CHAFA_FGBG), Int32(STORIES_CHAFA_DITHER_NONE))
            }
        }

        static func symbols(_ output: PictureOutput) -> (UInt32, UInt32) {
            let space = UInt32(STORIES_CHAFA_TAG_SPACE)
            switch output.picture {
            case .half:
                return (space | UInt32(STORIES_CHAFA_TAG_SOLID) | UInt32(STORIES_CHAFA_TAG_VHALF), 0)
            case .ascii:
                return (space | UInt32(STORIES_CHAFA_TAG_ASCII), 0)
            default:
                var tags = space | UInt32(STORIES_CHAFA_TAG_SOLID) | UInt32(STORIES_CHAFA_TAG_BLOCK)
                    | UInt32(STORIES_CHAFA_TAG_QUAD) | UInt32(STORIES_CHAFA_TAG_HALF)
                if output.sextants { tags |= UInt32(STORIES_CHAFA_TAG_SEXTANT) }
                return (tags, UInt32(STORIES_CHAFA_TAG_WIDE))
            }
        }
    }

    private static let memo = NIOLockedValueBox(Memo())
}
