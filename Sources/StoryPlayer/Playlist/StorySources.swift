import Foundation
import MediaCache

/// What the command line named, read into one playlist: JSON playlists, folders (each subfolder an author), video
/// and photo files, HLS playlists, http(s) URLs and M3U lists, in the order given.
public struct StorySources: Sendable, Equatable {
    /// The stories, grouped by author where a folder or a JSON playlist says whose they are.
    public var playlist: Playlist
    /// Files passed over, by why (`not media`, `unreadable`, `missing`, …), with how many.
    public var skipped: [String: Int]
    /// The files (and list entries) passed over, each with why, in the order they were met.
    public var skippedFiles: [SkippedFile] = []
    /// True when every source is a JSON playlist (whose relative files play over the simulated network).
    public var isJSONOnly: Bool
    /// True when every source names one story (a media file, an HLS playlist, a URL), not a folder or a list: the
    /// person chose these and their order, so a run starts at the first named, seen or not.
    public var namesStories = false

    /// Sources read elsewhere (feeds, the people followed).
    public init(playlist: Playlist, skipped: [String: Int], isJSONOnly: Bool) {
        self.playlist = playlist
        self.skipped = skipped
        self.isJSONOnly = isJSONOnly
    }

    /// A URL's last path component, or its host: a story's title when nothing else names it.
    public static func name(of url: URL) -> String { Reader.name(of: url) }

    /// Video and photo file extensions played as stories (what FFmpeg reads from phones and cameras).
    public static let mediaExtensions: Set<String> = [
        "mp4", "m4v", "mov", "webm", "mkv", "avi", "3gp", "3g2", "ts", "mts", "m2ts", "mpg", "mpeg", "ogv", "flv",
        "wmv", "hevc", "jpg", "jpeg", "png", "webp", "gif", "heic", "heif", "avif", "bmp", "tif", "tiff",
    ]

    /// How deep a folder is searched below an author's folder (a guard against links that loop).
    static let maximumDepth = 16

    /// Reads `arguments` as the user typed them; relative paths resolve against `directory`.
    public static func load(_ arguments: [String], directory: URL? = nil) throws(PlaylistError) -> StorySources {
        guard !arguments.isEmpty else {
            throw PlaylistError(file: "", field: "", message: "no source given (name a playlist, a folder, files or URLs)")
        }
        let base = directory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        var reader = Reader()
        var titles: [String] = []
        var firstFile: URL?
        var jsonOnly = true
        var namesStories = true
        for argument in arguments {
            let read = try reader.read(argument, base: base)
            titles.append(read.title)
            if !read.namesStory { namesStories = false }
            if firstFile == nil { firstFile = read.file }
            if !read.isJSON { jsonOnly = false }
            if read.isJSON, arguments.count == 1, var playlist = read.playlist {
                playlist.stories = Self.withSidecars(playlist.stories)
                var sources = StorySources(playlist: playlist, skipped: reader.skipped, isJSONOnly: true)
                sources.skippedFiles = reader.passedOver
                return sources
            }
        }
        guard !reader.stories.isEmpty else {
            let what = arguments.count == 1 ? "'\(arguments[0])'" : "the sources given"
            let why = Self.note(reader.skipped).map { " (\($0))" } ?? ""
            throw PlaylistError(file: "", field: "", message: "nothing to play in \(what)\(why): add videos or photos")
        }
        let title = titles.count == 1 ? titles[0] : "Stories"
        let file = firstFile ?? base.appendingPathComponent("stories")
        var sources = StorySources(
            playlist: Playlist(title: title, stories: Self.withSidecars(reader.stories), file: file), skipped: reader.skipped,
            isJSONOnly: jsonOnly)
        sources.namesStories = namesStories
        sources.skippedFiles = reader.passedOver
        return sources
    }

    /// Where the stories and the counts of what was skipped are gathered.
    struct Reader {
        var stories: [Story] = []
        var passedOver: [SkippedFile] = []
        var ids: Set<String> = []

        /// What one argument gave: its title, the file it names, and the playlist when it is a JSON file.
        struct Read {
            var title: String
            var file: URL?
            var isJSON = false
            var playlist: Playlist?
            /// The argument named one story (a media file, an HLS playlist or a URL).
            var namesStory = false
        }

        mutating func read(_ argument: String, base: URL) throws(PlaylistError) -> Read {
            func fail(_ message: String) -> PlaylistError { PlaylistError(file: argument, field: "", message: message) }
            let trimmed = argument.trimmingCharacters(in: .whitespaces)
            if let scheme = Self.scheme(of: trimmed) {
                switch scheme {
                case "http", "https":
                    let url: URL
                    do {
                        url = try OriginURL.parse(trimmed)
                    } catch {
                        if case .invalidURL(_, let reason) = error { throw fail(reason) }
                        throw fail("is not a valid URL")
                    }
                    add(Story(id: trimmed, title: Self.name(of: url), source: .remote(url)), author: nil)
                    return Read(title: Self.name(of: url), namesStory: true)
                case "file":
                    guard let url = StorySource.localFile(URL(string: trimmed)) else {
                        throw fail("is not a valid file URL (write file:///path/to/video.mp4)")
                    }
                    return try readPath(url.path, shown: argument)
                default:
                    throw fail("unsupported scheme '\(scheme)' (use http, https, file or a path)")
                }
            }
            let path = trimmed.hasPrefix("/") ? trimmed : base.appendingPathComponent(trimmed).path
            return try readPath(path, shown: argument)
        }

        private mutating func readPath(_ path: String, shown: String) throws(PlaylistError) -> Read {
            func fail(_ message: String) -> PlaylistError { PlaylistError(file: shown, field: "", message: message) }
            let url = URL(fileURLWithPath: path).standardizedFileURL
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw fail("no such file or folder")
            }
            if isDirectory.boolValue {
                guard FileManager.default.isReadableFile(atPath: url.path) else {
                    throw fail("cannot be read (check its permissions)")
                }
                readFolder(url)
                return Read(title: url.lastPathComponent, file: url.appendingPathComponent("stories"))
            }
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw fail("cannot be read (check its permissions)")
            }
            switch url.pathExtension.lowercased() {
            case "json":
                let playlist = try PlaylistParser.load(path: url.path, name: shown)
                for var story in playlist.stories {
                    // Beside other sources, a file named relative to the playlist is served at its own path.
                    if case .local(let path, let file) = story.source, !path.hasPrefix("/") {
                        story.source = .local(path: file.standardizedFileURL.path, file: file.standardizedFileURL)
                    }
                    add(story, author: story.author)
                }
                return Read(title: playlist.title, file: url, isJSON: true, playlist: playlist)
            case "m3u", "m3u8":
                let hls = try Self.isHLS(url, fail)
                if hls {
                    addFile(url, author: nil)
                } else {
                    try readList(url, shown: shown)
                }
                return Read(title: url.deletingPathExtension().lastPathComponent, file: url, namesStory: hls)
            default:
                let added = addFile(url, author: nil)
                if !added { count("not media", url.path) }
                return Read(title: url.lastPathComponent, file: url, namesStory: added)
            }
        }

        /// A folder: its own media files, then each subfolder as an author (its files at any depth), in natural
        /// name order. Files that are not media, unreadable ones and links that loop are counted, not played.
        private mutating func readFolder(_ folder: URL) {
            var visited: Set<String> = [folder.resolvingSymlinksInPath().path]
            let (files, folders) = entries(of: folder)
            let own = files.filter { addable($0) }
            var authors: [(name: String, files: [URL])] = []
            for subfolder in folders {
                var found: [URL] = []
                collect(subfolder, depth: 1, visited: &visited, into: &found)
                authors.append((subfolder.lastPathComponent, found))
            }
            // An HLS story's variant playlists and segments are parts of it, wherever they sit in the folder.
            let parts = Self.hlsParts(of: own + authors.flatMap(\.files))
            authors = authors.map { ($0.name, $0.files.filter { !parts.contains($0.path) }) }.filter { !$0.files.isEmpty }
            // The folder's own files are an author too once its subfolders are.
            let ownAuthor = authors.isEmpty ? nil : folder.lastPathComponent
            for file in own where !parts.contains(file.path) { addFile(file, author: ownAuthor) }
            for author in authors {
                for file in author.files { addFile(file, author: author.name) }
            }
        }

        private mutating func collect(_ folder: URL, depth: Int, visited: inout Set<String>, into found: inout [URL]) {
            guard visited.insert(folder.resolvingSymlinksInPath().path).inserted, depth <= StorySources.maximumDepth
            else {
                count("in a folder seen twice (a link that loops)", folder.path)
                return
            }
            let (files, folders) = entries(of: folder)
            found += files.filter { addable($0) }
            for subfolder in folders { collect(subfolder, depth: depth + 1, visited: &visited, into: &found) }
        }

        /// The files the HLS playlists among `files` refer to (variant playlists, segments, keys): parts of a
        /// story, not stories.
        static func hlsParts(of files: [URL]) -> Set<String> {
            var parts: Set<String> = []
            for file in files where file.pathExtension.lowercased() == "m3u8" {
                guard let data = FileManager.default.contents(atPath: file.path), data.count < 4 << 20 else { continue }
                let folder = file.deletingLastPathComponent()
                for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
                    let entry = line.trimmingCharacters(in: .whitespaces)
                    guard !entry.isEmpty, !entry.hasPrefix("#"), scheme(of: entry) == nil else { continue }
                    let path = entry.split(separator: "?").first.map(String.init) ?? entry
                    parts.insert(folder.appendingPathComponent(path).standardizedFileURL.path)
                }
            }
            return parts
        }

        /// A folder's files and subfolders in natural name order, without hidden entries.
        private mutating func entries(of folder: URL) -> (files: [URL], folders: [URL]) {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else {
                count("in a folder that cannot be read", folder.path)
                return ([], [])
            }
            var files: [URL] = []
            var folders: [URL] = []
            for name in names.sorted(by: NaturalOrder.less) where !name.hasPrefix(".") {
                let url = folder.appendingPathComponent(name)
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                    count("missing (a broken link)", url.path)
                    continue
                }
                if isDirectory.boolValue { folders.append(url) } else { files.append(url) }
            }
            return (files, folders)
        }

        /// True for a readable media file; anything else is counted with why.
        private mutating func addable(_ file: URL) -> Bool {
            let ext = file.pathExtension.lowercased()
            // Caption files belong to the story beside them.
            if ext == "srt" || ext == "vtt" { return false }
            guard StorySources.mediaExtensions.contains(ext) || ext == "m3u8" else {
                count("not media", file.path)
                return false
            }
            guard FileManager.default.isReadableFile(atPath: file.path) else {
                count("unreadable", file.path)
                return false
            }
            return true
        }

        /// Adds a media file (an HLS playlist too) as a story; false when it is not media.
        @discardableResult
        private mutating func addFile(_ file: URL, author: String?) -> Bool {
            let ext = file.pathExtension.lowercased()
            guard StorySources.mediaExtensions.contains(ext) || ext == "m3u8" || ext == "m3u" else { return false }
            let path = file.standardizedFileURL.path
            add(Story(id: path, title: file.lastPathComponent, source: .local(path: path, file: URL(fileURLWithPath: path))), author: author)
            return true
        }

        /// An M3U list of files and URLs (`#EXTINF` lines title the entry after them); missing files are counted.
        private mutating func readList(_ list: URL, shown: String) throws(PlaylistError) {
            guard let data = FileManager.default.contents(atPath: list.path),
                let text = String(data: data, encoding: .utf8) ?? String(data: data, encoding: .isoLatin1)
            else { throw PlaylistError(file: shown, field: "", message: "cannot be read (check its permissions)") }
            let folder = list.deletingLastPathComponent()
            var title: String?
            for raw in text.split(whereSeparator: \.isNewline) {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.isEmpty { continue }
                if line.hasPrefix("#EXTINF:") {
                    let info = line.dropFirst("#EXTINF:".count)
                    title = info.firstIndex(of: ",").map { String(info[info.index(after: $0)...]).trimmingCharacters(in: .whitespaces) }
                    if title?.isEmpty == true { title = nil }
                    continue
                }
                if line.hasPrefix("#") { continue }
                defer { title = nil }
                if let scheme = Self.scheme(of: line), scheme != "file" {
                    guard scheme == "http" || scheme == "https", let url = try? OriginURL.parse(line) else {
                        count("not a file or http(s) URL", line)
                        continue
                    }
                    add(Story(id: line, title: title ?? Self.name(of: url), source: .remote(url)), author: nil)
                    continue
                }
                let path: String
                if Self.scheme(of: line) == "file" {
                    guard let url = StorySource.localFile(URL(string: line)) else {
                        count("not a file or http(s) URL", line)
                        continue
                    }
                    path = url.path
                } else {
                    path = line.hasPrefix("/") ? line : folder.appendingPathComponent(line).path
                }
                let file = URL(fileURLWithPath: path).standardizedFileURL
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                    count("missing", file.path)
                    continue
                }
                guard addable(file) else { continue }
                let before = stories.count
                addFile(file, author: nil)
                if let title, stories.count > before { stories[stories.count - 1].title = title }
            }
        }

        private mutating func add(_ story: Story, author: String?) {
            var story = story
            story.author = author
            // The same file named twice plays twice, under ids that stay apart.
            var id = story.id
            var n = 2
            while !ids.insert(id).inserted {
                id = "\(story.id)#\(n)"
                n += 1
            }
            story.id = id
            stories.append(story)
        }

        /// How many were passed over, by why.
        var skipped: [String: Int] { passedOver.reduce(into: [:]) { $0[$1.reason, default: 0] += 1 } }

        private mutating func count(_ reason: String, _ what: String) {
            passedOver.append(SkippedFile(path: what, reason: reason))
        }

        /// An argument's URL scheme, lowercased (nil for a path).
        static func scheme(of text: String) -> String? {
            guard let colon = text.firstIndex(of: ":"), text[..<colon].first?.isLetter == true,
                text[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
                text[colon...].hasPrefix("://")
            else { return nil }
            return text[..<colon].lowercased()
        }

        /// A URL's last path component, or its host.
        static func name(of url: URL) -> String {
            let last = url.lastPathComponent
            return last.isEmpty || last == "/" ? (url.host ?? url.absoluteString) : last
        }

        /// True when an `.m3u8`/`.m3u` file is an HLS playlist (`#EXT-X-` tags) rather than a list of files.
        static func isHLS(_ file: URL, _ fail: (String) -> PlaylistError) throws(PlaylistError) -> Bool {
            guard let handle = FileHandle(forReadingAtPath: file.path) else {
                throw fail("cannot be read (check its permissions)")
            }
            defer { try? handle.close() }
            let head = (try? handle.read(upToCount: 64 * 1024)) ?? Data()
            return String(decoding: head, as: UTF8.self).contains("#EXT-X-")
        }
    }
}

/// Names as phones and cameras number them: `IMG_2` before `IMG_10`, letters without regard to case.
public enum NaturalOrder {
    /// True when `a` sorts before `b`.
    public static func less(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.lowercased().unicodeScalars), Array(b.lowercased().unicodeScalars))
        var (i, j) = (0, 0)
        while i < x.count, j < y.count {
            if CharacterSet.decimalDigits.contains(x[i]), CharacterSet.decimalDigits.contains(y[j]) {
                let (startI, startJ) = (i, j)
                while i < x.count, CharacterSet.decimalDigits.contains(x[i]) { i += 1 }
                while j < y.count, CharacterSet.decimalDigits.contains(y[j]) { j += 1 }
                let left = String(String.UnicodeScalarView(x[startI..<i])).drop { $0 == "0" }
                let right = String(String.UnicodeScalarView(y[startJ..<j])).drop { $0 == "0" }
                if left.count != right.count { return left.count < right.count }
                if left != right { return left < right }
                continue
            }
            if x[i] != y[j] { return x[i].value < y[j].value }
            i += 1
            j += 1
        }
        if x.count - i != y.count - j { return x.count - i < y.count - j }
        return a < b
    }
}
