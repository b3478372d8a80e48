import Foundation

/// XML as the system's parser can take it: valid UTF-8. The parser hands names and attribute values to Swift
/// as UTF-8 and traps on bytes that are not; a feed in Latin-1 or with stray bytes is read as Latin-1 instead
/// (every byte a character), its declaration saying so no more.
enum XMLText {
    /// `data` unchanged when it is UTF-8, else its Latin-1 reading in UTF-8 with the declared encoding removed.
    static func utf8(_ data: Data) -> Data {
        if String(validatingUTF8: data) != nil { return data }
        var text = String(String.UnicodeScalarView(data.map { Unicode.Scalar($0) }))
        // `<?xml version="1.0" encoding="ISO-8859-1"?>`: the bytes are UTF-8 now.
        if text.hasPrefix("<?xml"), let end = text.range(of: "?>") {
            let declaration = String(text[..<end.lowerBound])
            let cleaned = declaration.replacingOccurrences(
                of: #"\s+encoding\s*=\s*("[^"]*"|'[^']*')"#, with: "", options: .regularExpression)
            text = cleaned + text[end.lowerBound...]
        }
        return Data(text.utf8)
    }
}

extension String {
    /// The text of `data` when it is valid UTF-8 (nil else).
    fileprivate init?(validatingUTF8 data: Data) {
        guard let text = String(bytes: data, encoding: .utf8) else { return nil }
        self = text
    }
}
