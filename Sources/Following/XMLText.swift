import Foundation

/// XML as the system's parser can take it: valid UTF-8. The parser hands names and attribute values to Swift
/// as UTF-8 and traps on bytes that are not; a feed in Latin-1 or with stray bytes is read as Latin-1 instead
/// (every byte a character), its declaration saying so no more.
enum XMLText {
    /// `data` as UTF-8 (a Latin-1 reading, its declared encoding removed, when it is not) without processing
    /// instructions after the declaration: the system's parser reads past the end of one that has no data
    /// (`<?pi?>`), and feeds need none.
    static func utf8(_ data: Data) -> Data {
        var data = data
        if String(validatingUTF8: data) == nil { data = latin1(data) }
        guard data.range(of: Data("<?".utf8)) != nil, let text = String(bytes: data, encoding: .utf8) else { return data }
        return Data(withoutInstructions(text).utf8)
    }

    /// `text` with only a well-formed leading declaration (`<?xml` and a space, no tag inside) left of its
    /// processing instructions; one cut short runs to the end and goes too. Removal repeats, as taking one out can
    /// join the text around it into another (`<<?a?>?b?>`).
    static func withoutInstructions(_ text: String) -> String {
        let declaration = text.range(of: #"^<\?xml[ \t\r\n][^<>?]*\?>"#, options: .regularExpression)
            .map { String(text[$0]) } ?? ""
        var body = String(text.dropFirst(declaration.count))
        while body.contains("<?") {
            body = body.replacingOccurrences(of: #"<\?[\s\S]*?(\?>|$)"#, with: "", options: .regularExpression)
        }
        return declaration + body
    }

    /// Every byte of `data` as the Latin-1 character it is, in UTF-8, the declared encoding removed.
    private static func latin1(_ data: Data) -> Data {
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
