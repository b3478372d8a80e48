import Foundation

/// One in-flight origin fetch of a byte range, shared by every reader (and preload) that needs its bytes.
struct FetchRecord: Sendable, Equatable {
    let id: Int
    var start: Int64
    /// Exclusive end the fetch stops at; nil for the resource's end. Shrinks when a later fetch takes over a tail.
    var target: Int64?
    /// The next offset this fetch will write.
    var progress: Int64
    /// Readers and preloads relying on it; at zero the fetch is cancelled.
    var interest: Int
    /// True once it writes a version found during it (a new ETag, a whole 200, bytes that differ): the reader
    /// that found it restarts from byte 0 and will want these bytes again, so letting go does not cut it short.
    var carriesNewVersion = false
    /// The fetch this one leads straight into (its target is that fetch's start), kept for this fetch's reader.
    var leadsInto: Int?
    /// The target it was planned with, before a reader letting go cut it to its block.
    var plannedTarget: Int64?
    /// The generation of the cached copy its reader saw when planning it (nil: none was cached).
    var generation: Int64?
}

/// How a fetch ended, kept briefly so readers that relied on it can tell why their bytes did not arrive.
enum FetchOutcome: Sendable {
    case finished
    case failed(any Error)
    case cancelled
}

/// What a reader should do next for a missing offset.
enum FetchPlan: Sendable, Equatable {
    /// Wait for the fetch with this id (already held, or joined now).
    case wait(fetchID: Int)
    /// Start a new fetch of `start..<target` (target nil: to the end); `truncated` fetches now stop at `start`.
    case start(fetchID: Int, start: Int64, target: Int64?)
}

/// Whether a resource's cached copy was checked against the origin in this session.
enum ValidationPhase: Sendable, Equatable {
    case notStarted
    case running
    case done
}

/// What the once-per-session check against the origin found.
enum ValidationResult: Sendable, Equatable {
    /// Same version (or the origin would not say): the cached copy stays.
    case unchanged
    /// Another version: the store replaced the cached copy.
    case changed(ResourceMetadata)
    /// Gone at the origin (404, 410): the cached copy was removed.
    case gone
    /// The origin could not be reached: the cached copy stays in service.
    case offline
    /// The check was cancelled before an answer: nothing is known.
    case cancelled
}

/// Something the planner's owner must do outside its lock.
enum PlannerAction: Sendable, Equatable {
    /// Cancel this fetch's task now.
    case cancel(fetchID: Int)
    /// Let this fetch finish the block it is in, then cancel it if still nobody wants it (`isUnwanted`).
    case cancelAfterGrace(fetchID: Int)
}
