import Foundation

/// Where a story's video comes from.
public enum StorySource: Sendable, Equatable {
    /// An http or https URL.
    case remote(URL)
    /// A file below the playlist's folder (served by the built-in origin); the path is relative to that folder.
    case local(path: String, file: URL)
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

    /// Creates a story.
    public init(id: String, title: String, source: StorySource, maxViews: Int? = nil, duration: Double? = nil) {
        self.id = id
        self.title = title
        self.source = source
        self.maxViews = maxViews
        self.duration = duration
    }

    /// The text of the `url` field as written in the playlist.
    public var urlText: String {
        switch source {
        case .remote(let url): return url.absoluteString
        case .local(let path, _): return path
        }
    }
}

/// A titled list of stories.
public struct Playlist: Sendable, Equatable {
    /// The playlist title.
    public var title: String
    /// At least one story, ids unique.
    public var stories: [Story]
    /// The file the playlist was read from.
    public var file: URL

    /// Creates a playlist.
    public init(title: String, stories: [Story], file: URL) {
        self.title = title
        self.stories = stories
        self.file = file
    }

    /// The folder relative URLs resolve against.
    public var folder: URL { file.deletingLastPathComponent() }

    /// True when some story is served from the playlist's folder.
    public var hasLocalStories: Bool {
        stories.contains { if case .local = $0.source { return true } else { return false } }
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

    public var description: String { field.isEmpty ? "\(file): \(message)" : "\(file): \(field): \(message)" }
}
