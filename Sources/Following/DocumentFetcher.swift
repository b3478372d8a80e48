import Foundation
import MediaCache
import StoryPlayer

/// Fetches a small document (a feed, a page's head) through the cache, with its validators: the next refresh
/// asks with If-None-Match/If-Modified-Since and a 304 costs no body; a `max-age` the origin gave is honoured
/// (no request at all); an unreachable origin leaves the cached copy in service.
public enum DocumentFetcher {
    /// A fetched document.
    public struct Document: Sendable {
        /// Its bytes (at most the limit asked for).
        public var data: Data
        /// Its `Content-Type`, when the origin said.
        public var contentType: String?
        /// How the refresh went.
        public var status: RefreshStatus
        /// Why the origin could not be reached (for `offline`).
        public var failure: String?
        /// The cached copy was read without waiting for the check against the origin (`status` says
        /// `notModified` until `settle` says what the check found).
        public var checkPending = false
    }

    /// Fetches `url` whole, at most `limit` bytes, within `timeout`. Throws one sentence when nothing usable came.
    /// With `waitingForCheck` false a whole cached copy is read at once, its check against the origin running
    /// beside (`settle` waits for it).
    public static func fetch(
        _ url: URL, loader: MediaLoader, limit: Int = FeedParser.maximumBytes, timeout: Duration = .seconds(10),
        waitingForCheck: Bool = true
    ) async throws(FeedError) -> Document {
        let key = CacheKey(url: url)
        let before = loader.cached(key)
        let result: Result<Document, FeedError> = await withTaskGroup(of: Result<Document, FeedError>?.self) { group in
            group.addTask {
                do throws(FeedError) {
                    let cachedWhole = before.map { info in
                        info.metadata.contentLength.map { info.ranges.total == $0 && $0 > 0 } ?? false
                    } ?? false
                    return .success(try await read(
                        url, key: key, before: before, loader: loader, limit: limit,
                        wait: waitingForCheck || !cachedWhole ? timeout : nil))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(FeedError("did not answer within \(timeout.components.seconds) s"))
        }
        return try result.get()
    }

    /// What the check of `url`'s copy found, once it is over; `before` is the copy as it was before the read.
    public static func settle(_ url: URL, before: ResourceInfo?, loader: MediaLoader) async -> (RefreshStatus, String?) {
        let key = CacheKey(url: url)
        await loader.checkFinished(key: key)
        let failure = loader.lastOriginFailure(for: key)
        let status = status(before: before, after: loader.cached(key), failure: failure)
        return (status, status == .offline ? failure : nil)
    }

    /// The copy cached now, as a refresh compares it.
    public static func cachedCopy(of url: URL, loader: MediaLoader) -> ResourceInfo? { loader.cached(CacheKey(url: url)) }

    /// `wait` bounds the wait for the check of a cached copy; nil reads it without waiting.
    private static func read(
        _ url: URL, key: CacheKey, before: ResourceInfo?, loader: MediaLoader, limit: Int, wait: Duration?
    ) async throws(FeedError) -> Document {
        await loader.validate(url: url, key: key, waitingAtMost: wait ?? .zero)
        let failure = wait == nil ? nil : loader.lastOriginFailure(for: key)
        var data = Data()
        let info: ContentInformation
        do {
            info = try await loader.contentInformation(for: url, key: key)
            if let length = info.contentLength, length > Int64(limit) {
                throw FeedError("is \(length >> 20) MB, more than a feed's \(limit >> 20) MB: it was not read")
            }
            for try await chunk in loader.load(LoadingRequest(url: url, cacheKey: key)) {
                data.append(contentsOf: chunk.bytes)
                if data.count > limit {
                    throw FeedError("is more than a feed's \(limit >> 20) MB: it was not read")
                }
            }
        } catch let error as FeedError {
            throw error
        } catch is CancellationError {
            throw FeedError("did not answer in time")
        } catch {
            throw FeedError("\(error)")
        }
        let status = Self.status(before: before, after: loader.cached(key), failure: failure)
        var document = Document(
            data: data, contentType: info.contentType, status: status, failure: status == .offline ? failure : nil)
        document.checkPending = wait == nil
        return document
    }

    /// How a refresh went, from the copy before and after it and the origin's failure, if any.
    static func status(before: ResourceInfo?, after: ResourceInfo?, failure: String?) -> RefreshStatus {
        if let before, before.ranges.total > 0, failure != nil, before.metadata == after?.metadata { return .offline }
        if let before, let after, before.generation == after.generation, before.metadata == after.metadata,
            before.ranges == after.ranges
        {
            return .notModified
        }
        return .fresh
    }
}
