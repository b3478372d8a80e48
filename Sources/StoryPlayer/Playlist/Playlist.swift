import Foundation

/// Where a story's video comes from.
public enum StorySource: Sendable, Equatable {
    /// An http or https URL.
    case remote(URL)
    /// A file on this machine (served by the built-in origin): `path` as the source named it (relative to a JSON
    /// playlist's folder, or the file's name), `file` where it is.
    case local(path: String, file: URL)
}

/// Where a story came from.
public enum StoryOrigin: Sendable, Equatable {
    /// Named by the source itself: a file or a URL (which one its `source` says).
    case named
    /// An item of a feed.
    case feed
    /// A web page resolved by an extractor.
    case page
}

/// One story of a playlist.
public struct Story: Sendable, Equatable, Identifiable {
    /// Unique within the playlist.
    public var id: String
    /// Shown in the header; defaults to the id.
    public var title: String
    /// The video.
    public var source: StorySource
    /// Show at most this many times across runs (nil: no limit).
    public var maxViews: Int?
    /// Duration in seconds: a photo's time on screen, or for media that says nothing of its own.
    public var duration: Double?
    /// Whose story it is (nil: the playlist's own stories, not grouped by author).
    public var author: String?
    /// When it was posted (a feed item's date), shown as its age.
    public var published: Date?
    /// Where it came from, as the headless `source` field says: `file`, `url`, `feed` or `page`.
    public var origin: StoryOrigin = .named
    /// What seen state and play counts are kept under when not the id and URL: a feed item's guid, which stays
    /// while its media URL is signed anew on every refresh.
    public var seenKey: String?
    /// The cache key of its bytes when not its URL's (a page's media: the page URL and the format).
    public var cacheKey: String?
    /// Why it cannot play, when that was known before it started (a page no extractor could resolve).
    public var unavailable: String?
    /// Its source is a web page whose media URL is found only when the story is about to play (`LateSources`);
    /// `cacheKey` names its bytes meanwhile.
    public var resolvesLate = false
    /// Caption files beside it or named by the playlist (tracks inside the file are found when it opens).
    public var captions: [CaptionSource] = []

    /// Creates a story.
    public init(
        id: String, title: String, source: StorySource, maxViews: Int? = nil, duration: Double? = nil,
        author: String? = nil
    ) {
        self.author = author
        self.id = id
        self.title = title
        self.source = source
        self.maxViews = maxViews
        self.duration = duration
    }

    /// `file`, `url`, `feed` or `page`.
    public var originName: String {
        switch origin {
        case .feed: return "feed"
        case .page: return "page"
        case .named:
            if case .local = source { return "file" }
            return "url"
        }
    }

    /// The text of the `url` field as written in the playlist.
    public var urlText: String {
        switch source {
        case .remote(let url): return url.absoluteString
        case .local(let path, _): return path
        }
    }
}

/// A titled list of stories, grouped by author where the source says whose they are.
public struct Playlist: Sendable, Equatable {
    /// The playlist title.
    public var title: String
    /// At least one story, ids unique; an author's stories are next to each other.
    public var stories: [Story]
    /// The file the playlist was read from (for sources named on the command line, the first of them).
    public var file: URL
    /// The simulated link a JSON playlist asks its local files to be served over (`"network": "4g"`), by name;
    /// nil: they are read from disk.
    public var network: String?

    /// Creates a playlist.
    public init(title: String, stories: [Story], file: URL, network: String? = nil) {
        self.title = title
        self.stories = stories
        self.file = file
        self.network = network
    }

    /// The folder relative URLs resolve against.
    public var folder: URL { file.deletingLastPathComponent() }

    /// The authors in order, each with the indices of its stories (one unnamed group for ungrouped stories).
    public var authors: [AuthorGroup] { AuthorGroup.groups(of: stories) }

    /// True when some story is a file on this machine (served by the built-in origin).
    public var hasLocalStories: Bool {
        stories.contains { if case .local = $0.source { return true } else { return false } }
    }

    /// The folder the built-in origin serves at its root: the playlist's own, when a story names a file relative
    /// to it (nil when none does).
    public var localRoot: URL? {
        stories.contains { if case .local(let path, _) = $0.source { !path.hasPrefix("/") } else { false } }
            ? folder : nil
    }

    /// The folders whose files the built-in origin serves at their absolute paths: those of files named by an
    /// absolute path (a folder, a file or a list named on the command line, or an absolute path in a playlist).
    public var localFolders: [URL] {
        var seen: Set<String> = []
        var folders: [URL] = []
        for story in stories {
            guard case .local(let path, let file) = story.source, path.hasPrefix("/") else { continue }
            let folder = file.deletingLastPathComponent().standardizedFileURL
            if seen.insert(folder.path).inserted { folders.append(folder) }
        }
        return folders
    }
}

extension StorySource {
    /// The file a `file:` URL names: only on this machine (no host, or localhost), by an absolute path.
    static func localFile(_ url: URL?) -> URL? {
        guard let url, url.isFileURL, url.path.hasPrefix("/"), url.host == nil || url.host == "" || url.host == "localhost"
        else { return nil }
        return url
    }

    /// The folder a local file is served from: its path less the relative path it was named by.
    static func servedFolder(path: String, file: URL) -> URL {
        let filePath = file.standardizedFileURL.path
        guard !path.hasPrefix("/"), filePath.hasSuffix("/" + path) else { return file.deletingLastPathComponent() }
        return URL(fileURLWithPath: String(filePath.dropLast(path.count)), isDirectory: true)
    }
}

/// One author's stories: a run of neighbouring stories with the same author.
public struct AuthorGroup: Sendable, Equatable {
    /// The author's name (nil for stories not grouped by author).
    public var name: String?
    /// The indices of the author's stories in the playlist.
    public var stories: Range<Int>

    /// A group.
    public init(name: String?, stories: Range<Int>) {
        self.name = name
        self.stories = stories
    }

    /// The groups of `stories`: each run of neighbouring stories with the same author.
    public static func groups(of stories: [Story]) -> [AuthorGroup] { groups(ofAuthors: stories.map(\.author)) }

    /// The groups of stories whose authors are `names`, in order.
    public static func groups(ofAuthors names: [String?]) -> [AuthorGroup] {
        var groups: [AuthorGroup] = []
        var start = 0
        for i in names.indices where i + 1 == names.count || names[i + 1] != names[i] {
            groups.append(AuthorGroup(name: names[i], stories: start..<(i + 1)))
            start = i + 1
        }
        return groups
    }
}

/// A playlist that cannot be used, naming the file, the field and what to do.
public struct PlaylistError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The playlist file as given.
    public var file: String
    /// The field path, e.g. `stories[2].url`; empty for the whole file.
    public var field: String
    /// What is wrong and how to fix it.
    public var message: String

    /// Creates an error.
    public init(file: String, field: String, message: String) {
        self.file = file
        self.field = field
        self.message = message
    }

    public var description: String {
        [file, field, message].filter { !$0.isEmpty }.joined(separator: ": ")
    }
}
