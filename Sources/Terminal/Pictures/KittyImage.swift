import Foundation

/// The kitty graphics protocol's messages: an RGB image shown over a block of cells, and its removal.
public enum KittyImage {
    /// Base64 characters per message (the protocol's limit for one chunk).
    static let chunk = 4096

    /// Transmits `pixels` as image `id` and places it at the cursor over `columns`×`rows` cells (the terminal
    /// scales it to them), replacing the image that had this id; the cursor does not move, nothing is answered.
    public static func show(_ pixels: ChafaPicture.Pixels, columns: Int, rows: Int, id: Int) -> [UInt8] {
        let payload = Array(Data(pixels.rgb.prefix(pixels.width * pixels.height * 3)).base64EncodedString().utf8)
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + payload.count / chunk * 16 + 96)
        var offset = 0
        var first = true
        repeat {
            let end = Swift.min(payload.count, offset + chunk)
            let more = end < payload.count ? 1 : 0
            let keys = first
                ? "a=T,f=24,s=\(pixels.width),v=\(pixels.height),c=\(columns),r=\(rows),i=\(id),p=1,C=1,q=2,m=\(more)"
                : "m=\(more)"
            out += Array("\u{1B}_G\(keys);".utf8)
            out += payload[offset..<end]
            out += [0x1B, UInt8(ascii: "\\")]
            offset = end
            first = false
        } while offset < payload.count
        return out
    }

    /// Removes image `id` and frees its data.
    public static func delete(id: Int) -> [UInt8] { Array("\u{1B}_Ga=d,d=I,i=\(id),q=2\u{1B}\\".utf8) }
}
