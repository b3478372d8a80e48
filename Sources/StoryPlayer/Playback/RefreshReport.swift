import Foundation

/// How a followed source's refresh went.
public enum RefreshStatus: String, Sendable, Equatable {
    /// A new copy came from the origin.
    case fresh
    /// The origin said the cached copy is still its own (a 304, or a copy still fresh by its max-age).
    case notModified = "not modified"
    /// The origin could not be reached: the copy cached at the last refresh is used.
    case offline
    /// Nothing usable: the origin failed and nothing was cached, or the document could not be read.
    case error
}

/// How one source's refresh went (a headless `refresh` event, a line of `follow ls`).
public struct RefreshReport: Sendable, Equatable {
    /// The source's URL.
    public var url: URL
    /// The author its stories are shown under.
    public var author: String
    /// fresh, not modified, offline or error.
    public var status: RefreshStatus
    /// Its items (all of them, played or not).
    public var items: Int
    /// Its stories within the time asked for.
    public var stories: Int
    /// Milliseconds the refresh took.
    public var milliseconds: Int
    /// What went wrong (error), or why the cached copy is used (offline).
    public var message: String?

    /// A report.
    public init(
        url: URL, author: String, status: RefreshStatus, items: Int, stories: Int, milliseconds: Int,
        message: String? = nil
    ) {
        self.url = url
        self.author = author
        self.status = status
        self.items = items
        self.stories = stories
        self.milliseconds = milliseconds
        self.message = message
    }
}
