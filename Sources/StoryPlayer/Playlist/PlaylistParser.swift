import Foundation
import MediaCache

/// Reads and validates playlist JSON, reporting the first problem with its file, story and field.
public enum PlaylistParser {
    /// Reads `path` and validates it; messages name it as `name` (by default the path as given).
    public static func load(path: String, name: String? = nil) throws(PlaylistError) -> Playlist {
        let url = URL(fileURLWithPath: path)
        let path = name ?? path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw PlaylistError(file: path, field: "", message: "no such file (pass the path of a playlist JSON file)")
        }
        guard !isDirectory.boolValue else {
            throw PlaylistError(file: path, field: "", message: "is a directory (pass the playlist JSON file itself)")
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw PlaylistError(file: path, field: "", message: "cannot be read (check its permissions)")
        }
        return try parse(data, name: path, file: url.standardizedFileURL, checkFiles: true)
    }

    /// The fields a playlist, an author and a story may have.
    static let playlistFields = ["title", "stories", "authors", "network"]
    static let authorFields = ["name", "stories"]
    static let storyFields = ["id", "title", "url", "maxViews", "duration", "captions"]

    /// Validates playlist bytes; `name` appears in messages, `file` anchors relative URLs.
    public static func parse(_ data: Data, name: String, file: URL, checkFiles: Bool = false) throws(PlaylistError)
        -> Playlist
    {
        let fail = { (field: String, message: String) in PlaylistError(file: name, field: field, message: message) }
        guard String(data: data, encoding: .utf8) != nil else {
            throw fail("", "is not valid UTF-8 text (save it as UTF-8)")
        }
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw fail("", "is not valid JSON (\(PlaylistSyntax.describe(Self.reason(error), in: data)))")
        }
        if let comma = PlaylistSyntax.trailingComma(in: data) {
            let (line, column) = PlaylistSyntax.position(of: comma.offset, in: data)
            throw fail("", "is not valid JSON (a comma before '\(comma.closing)' at line \(line), column \(column): remove it)")
        }
        guard let root = json as? [String: Any] else {
            throw fail("", "must be a JSON object with \"title\" and \"stories\" (or \"authors\"), found \(Self.kind(json))")
        }
        if let unknown = PlaylistSyntax.unknownKey(in: root, known: Self.playlistFields) {
            throw fail(unknown.key, PlaylistSyntax.unknownKeyMessage(unknown, what: "a playlist", known: Self.playlistFields))
        }
        var title = file.deletingPathExtension().lastPathComponent
        if let value = root["title"] {
            guard let text = value as? String, !Self.isNumber(value) else {
                throw fail("title", "must be a string, found \(Self.kind(value))")
            }
            // A blank title says nothing: the file's name does.
            if !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { title = text }
        }
        var network: String?
        if let value = root["network"] {
            guard let name = value as? String, !Self.isNumber(value),
                !name.trimmingCharacters(in: .whitespaces).isEmpty
            else {
                throw fail("network", "must be the name of a simulated link such as \"4g\", found \(Self.kind(value))")
            }
            network = name.trimmingCharacters(in: .whitespaces).lowercased()
        }
        let folder = file.deletingLastPathComponent()
        var ids: [String: String] = [:]
        var stories: [Story] = []
        switch (root["stories"], root["authors"]) {
        case (.some, .some):
            throw fail("", "has both \"stories\" and \"authors\" (use one: a list of stories, or of authors with theirs)")
        case (.none, .none):
            throw fail("stories", "is missing (add a list of stories, or a list of authors with theirs)")
        case (.some(let value), .none):
            stories = try storyList(value, label: "stories", author: nil, folder: folder, checkFiles: checkFiles, ids: &ids, fail)
        case (.none, .some(let value)):
            guard let authors = value as? [Any] else { throw fail("authors", "must be a list, found \(Self.kind(value))") }
            guard !authors.isEmpty else { throw fail("authors", "is empty (add at least one author)") }
            var names: Set<String> = []
            for (index, element) in authors.enumerated() {
                let label = "authors[\(index)]"
                guard let object = element as? [String: Any] else {
                    throw fail(label, "must be an object with \"name\" and \"stories\", found \(Self.kind(element))")
                }
                if let unknown = PlaylistSyntax.unknownKey(in: object, known: Self.authorFields) {
                    throw fail("\(label).\(unknown.key)",
                        PlaylistSyntax.unknownKeyMessage(unknown, what: "an author", known: Self.authorFields))
                }
                guard let nameValue = object["name"] else { throw fail("\(label).name", "is missing (give each author a name)") }
                guard let name = nameValue as? String, !Self.isNumber(nameValue),
                    !name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
                else { throw fail("\(label).name", "must be a non-empty string, found \(Self.kind(nameValue))") }
                guard names.insert(name).inserted else {
                    throw fail("\(label).name", "'\(name)' is named twice (give each author one entry)")
                }
                guard let list = object["stories"] else {
                    throw fail("\(label) (\"\(name)\").stories", "is missing (add the author's stories)")
                }
                stories += try storyList(
                    list, label: "\(label).stories", author: name, folder: folder, checkFiles: checkFiles, ids: &ids, fail)
            }
        }
        return Playlist(title: title, stories: stories, file: file, network: network)
    }

    /// The stories of a `stories` list (`label` is its field path), checking ids against those seen so far.
    private static func storyList(
        _ value: Any, label listLabel: String, author: String?, folder: URL, checkFiles: Bool,
        ids seen: inout [String: String], _ fail: (String, String) -> PlaylistError
    ) throws(PlaylistError) -> [Story] {
        guard let list = value as? [Any] else { throw fail(listLabel, "must be a list, found \(Self.kind(value))") }
        guard !list.isEmpty else { throw fail(listLabel, "is empty (add at least one story)") }
        var stories: [Story] = []
        for (index, element) in list.enumerated() {
            var label = "\(listLabel)[\(index)]"
            guard let object = element as? [String: Any] else {
                throw fail(label, "must be an object, found \(Self.kind(element))")
            }
            if let unknown = PlaylistSyntax.unknownKey(in: object, known: Self.storyFields) {
                throw fail("\(label).\(unknown.key)",
                    PlaylistSyntax.unknownKeyMessage(unknown, what: "a story", known: Self.storyFields))
            }
            guard let idValue = object["id"] else { throw fail("\(label).id", "is missing (give each story an id)") }
            guard let id = idValue as? String, !Self.isNumber(idValue) else {
                throw fail("\(label).id", "must be a string, found \(Self.kind(idValue))")
            }
            guard !id.trimmingCharacters(in: .whitespaces).isEmpty else { throw fail("\(label).id", "is empty") }
            let here = label
            label = "\(label) (\"\(id)\")"
            if let first = seen[id] {
                throw fail("\(label).id", "duplicates \(first)'s id (ids must be unique)")
            }
            seen[id] = here
            var storyTitle = id
            if let value = object["title"] {
                guard let text = value as? String, !Self.isNumber(value) else {
                    throw fail("\(label).title", "must be a string, found \(Self.kind(value))")
                }
                // A blank title falls back to the id, so every story has a name on screen.
                if !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { storyTitle = text }
            }
            guard let urlValue = object["url"] else { throw fail("\(label).url", "is missing (add the video's URL)") }
            guard let urlText = urlValue as? String, !Self.isNumber(urlValue) else {
                throw fail("\(label).url", "must be a string, found \(Self.kind(urlValue))")
            }
            let source = try source(urlText, folder: folder, checkFiles: checkFiles) { fail("\(label).url", $0) }
            let maxViews = try positiveInteger(object["maxViews"]) { fail("\(label).maxViews", $0) }
            let duration = try positiveNumber(object["duration"]) { fail("\(label).duration", $0) }
            var story = Story(
                id: id, title: storyTitle, source: source, maxViews: maxViews, duration: duration, author: author)
            if let value = object["captions"] {
                story.captions = try captions(value, folder: folder) { fail("\(label).captions\($0)", $1) }
            }
            stories.append(story)
        }
        return stories
    }

    /// A story's `captions`: a file or URL, or a list of them or of `{"url": ..., "lang": "en"}` objects. A file
    /// that is missing is not an error: the story plays without its words.
    private static func captions(
        _ value: Any, folder: URL, _ fail: (_ field: String, _ message: String) -> PlaylistError
    ) throws(PlaylistError) -> [CaptionSource] {
        let items: [Any] = (value as? [Any]) ?? [value]
        var found: [CaptionSource] = []
        for (index, item) in items.enumerated() {
            let at = value is [Any] ? "[\(index)]" : ""
            var text: String?
            var language: String?
            if let string = item as? String, !isNumber(item) {
                text = string
            } else if let object = item as? [String: Any] {
                if let unknown = object.keys.sorted().first(where: { $0 != "url" && $0 != "lang" }) {
                    throw fail(at, "unknown field '\(unknown)' (use url and lang)")
                }
                guard let url = object["url"] as? String, !isNumber(object["url"] as Any) else {
                    throw fail("\(at).url", "is missing (add the caption file's URL or path)")
                }
                text = url
                if let lang = object["lang"] {
                    guard let lang = lang as? String, CaptionLoading.isLanguageTag(lang) else {
                        throw fail("\(at).lang", "must be a language tag such as \"en\" or \"pt-BR\"")
                    }
                    language = lang
                }
            }
            guard let text else {
                throw fail(at, "must be a caption file's URL or path, or {\"url\": ..., \"lang\": ...}, found \(kind(item))")
            }
            let location = try source(text, folder: folder, checkFiles: false) { fail(at, $0) }
            if language == nil {
                let stem = URL(fileURLWithPath: text).deletingPathExtension().pathExtension
                if CaptionLoading.isLanguageTag(stem) { language = stem }
            }
            found.append(CaptionSource(location: location, language: language))
        }
        return found
    }

    private static func source(
        _ text: String, folder: URL, checkFiles: Bool, _ fail: (String) -> PlaylistError
    ) throws(PlaylistError) -> StorySource {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw fail("is empty (use an http(s) URL or a path relative to the playlist)") }
        if let colon = trimmed.firstIndex(of: ":"),
            trimmed[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
            trimmed[..<colon].first?.isLetter == true
        {
            let scheme = trimmed[..<colon].lowercased()
            if scheme == "file" {
                guard let url = StorySource.localFile(URL(string: trimmed)) else {
                    throw fail("'\(trimmed)' is not a valid file URL (write file:///path/to/video.mp4)")
                }
                return try absolute(url.path, checkFiles: checkFiles, fail)
            }
            guard scheme == "http" || scheme == "https" else {
                throw fail("unsupported scheme '\(scheme)' (use http, https, file or a relative path)")
            }
            do {
                return .remote(try OriginURL.parse(trimmed))
            } catch {
                if case .invalidURL(_, let reason) = error { throw fail("'\(trimmed)' \(reason)") }
                throw fail("'\(trimmed)' is not a valid URL")
            }
        }
        if trimmed.hasPrefix("/") { return try absolute(trimmed, checkFiles: checkFiles, fail) }
        if trimmed.hasPrefix("~/") {
            let home = FileManager.default.homeDirectoryForCurrentUser.path
            return try absolute(home + trimmed.dropFirst(1), checkFiles: checkFiles, fail)
        }
        // A path that climbs out of the playlist's folder names a file elsewhere: served at its absolute path.
        if trimmed.split(separator: "/").contains("..") {
            return try absolute(folder.appendingPathComponent(trimmed).standardizedFileURL.path, checkFiles: checkFiles, fail)
        }
        let file = folder.appendingPathComponent(trimmed)
        if checkFiles, !FileManager.default.fileExists(atPath: file.path) {
            throw fail("'\(trimmed)' does not exist next to the playlist (\(file.path))")
        }
        return .local(path: trimmed, file: file)
    }

    /// A file named by its absolute path.
    private static func absolute(_ path: String, checkFiles: Bool, _ fail: (String) -> PlaylistError)
        throws(PlaylistError) -> StorySource
    {
        let file = URL(fileURLWithPath: path).standardizedFileURL
        if checkFiles, !FileManager.default.fileExists(atPath: file.path) {
            throw fail("'\(path)' does not exist")
        }
        return .local(path: file.path, file: file)
    }

    private static func positiveInteger(_ value: Any?, _ fail: (String) -> PlaylistError) throws(PlaylistError)
        -> Int?
    {
        guard let value else { return nil }
        guard Self.isNumber(value), let number = value as? NSNumber else {
            throw fail("must be a whole number, found \(Self.kind(value))")
        }
        let double = number.doubleValue
        guard double == double.rounded(), abs(double) < 1e9 else {
            throw fail("must be a whole number, found \(number)")
        }
        guard double > 0 else { throw fail("must be at least 1, found \(Int(double))") }
        return Int(double)
    }

    /// The longest story a playlist may declare: 24 hours.
    public static let maximumDuration: Double = 86_400

    private static func positiveNumber(_ value: Any?, _ fail: (String) -> PlaylistError) throws(PlaylistError)
        -> Double?
    {
        guard let value else { return nil }
        guard Self.isNumber(value), let number = value as? NSNumber else {
            throw fail("must be a number of seconds, found \(Self.kind(value))")
        }
        guard number.doubleValue > 0, number.doubleValue.isFinite else {
            throw fail("must be more than 0 seconds, found \(number)")
        }
        guard number.doubleValue <= Self.maximumDuration else {
            throw fail("must be at most \(Int(Self.maximumDuration)) seconds (24 hours), found \(number)")
        }
        return number.doubleValue
    }

    /// True for JSON booleans (Foundation bridges them, and 0 and 1, between Bool and NSNumber).
    static func isBoolean(_ value: Any) -> Bool {
        if type(of: value) == Bool.self { return true }
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    /// True for JSON numbers (not booleans).
    static func isNumber(_ value: Any) -> Bool {
        value is NSNumber && !isBoolean(value) && !(value is String)
    }

    static func kind(_ value: Any) -> String {
        if isBoolean(value) { return "a boolean" }
        switch value {
        case is NSNull: return "null"
        case is String: return "a string"
        case let number as NSNumber where isNumber(number): return "a number"
        case is [Any]: return "a list"
        case is [String: Any]: return "an object"
        default: return "\(type(of: value))"
        }
    }

    private static func reason(_ error: Error) -> String {
        let text = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
        return text.replacingOccurrences(of: "\n", with: " ")
    }
}
