import Foundation
import MediaCache

/// Reads and validates playlist JSON, reporting the first problem with its file, story and field.
public enum PlaylistParser {
    /// Reads `path` (as the user typed it, used in messages) and validates it.
    public static func load(path: String) throws(PlaylistError) -> Playlist {
        let url = URL(fileURLWithPath: path)
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

    /// Validates playlist bytes; `name` appears in messages, `file` anchors relative URLs.
    public static func parse(_ data: Data, name: String, file: URL, checkFiles: Bool = false) throws(PlaylistError)
        -> Playlist
    {
        func fail(_ field: String, _ message: String) -> PlaylistError {
            PlaylistError(file: name, field: field, message: message)
        }
        guard String(data: data, encoding: .utf8) != nil else {
            throw fail("", "is not valid UTF-8 text (save it as UTF-8)")
        }
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw fail("", "is not valid JSON (\(Self.reason(error)))")
        }
        guard let root = json as? [String: Any] else {
            throw fail("", "must be a JSON object with \"title\" and \"stories\", found \(Self.kind(json))")
        }
        var title = file.deletingPathExtension().lastPathComponent
        if let value = root["title"] {
            guard let text = value as? String, !Self.isNumber(value) else {
                throw fail("title", "must be a string, found \(Self.kind(value))")
            }
            // A blank title says nothing: the file's name does.
            if !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { title = text }
        }
        guard let storiesValue = root["stories"] else {
            throw fail("stories", "is missing (add a list of stories)")
        }
        guard let list = storiesValue as? [Any] else {
            throw fail("stories", "must be a list, found \(Self.kind(storiesValue))")
        }
        guard !list.isEmpty else { throw fail("stories", "is empty (add at least one story)") }
        var stories: [Story] = []
        var seen: [String: Int] = [:]
        let folder = file.deletingLastPathComponent()
        for (index, element) in list.enumerated() {
            var label = "stories[\(index)]"
            guard let object = element as? [String: Any] else {
                throw fail(label, "must be an object, found \(Self.kind(element))")
            }
            guard let idValue = object["id"] else { throw fail("\(label).id", "is missing (give each story an id)") }
            guard let id = idValue as? String, !Self.isNumber(idValue) else {
                throw fail("\(label).id", "must be a string, found \(Self.kind(idValue))")
            }
            guard !id.trimmingCharacters(in: .whitespaces).isEmpty else { throw fail("\(label).id", "is empty") }
            label = "stories[\(index)] (\"\(id)\")"
            if let first = seen[id] {
                throw fail("\(label).id", "duplicates stories[\(first)]'s id (ids must be unique)")
            }
            seen[id] = index
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
            stories.append(Story(id: id, title: storyTitle, source: source, maxViews: maxViews, duration: duration))
        }
        return Playlist(title: title, stories: stories, file: file)
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
            guard scheme == "http" || scheme == "https" else {
                throw fail("unsupported scheme '\(scheme)' (use http, https or a relative path)")
            }
            do {
                return .remote(try OriginURL.parse(trimmed))
            } catch {
                if case .invalidURL(_, let reason) = error { throw fail("'\(trimmed)' \(reason)") }
                throw fail("'\(trimmed)' is not a valid URL")
            }
        }
        guard !trimmed.hasPrefix("/") else {
            throw fail("'\(trimmed)' is an absolute path (use a path relative to the playlist's folder)")
        }
        let components = trimmed.split(separator: "/")
        guard !components.contains("..") else {
            throw fail("'\(trimmed)' points outside the playlist's folder")
        }
        let file = folder.appendingPathComponent(trimmed)
        if checkFiles, !FileManager.default.fileExists(atPath: file.path) {
            throw fail("'\(trimmed)' does not exist next to the playlist (\(file.path))")
        }
        return .local(path: trimmed, file: file)
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
