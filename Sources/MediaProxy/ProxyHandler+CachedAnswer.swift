import Foundation
import MediaCache
import MediaFormats
import NIOCore
import NIOHTTP1

/// The hit path: a request for a resource whose every byte is cached and whose check against the origin is over
/// is answered on the event loop, from the data file by `sendfile`, without a task, a wait or a copy.
extension ProxyHandler {
    /// Answers `request` from a settled cached copy; false (nothing written) when the loader must answer it.
    func answerAtOnce(_ request: HTTPRequestHead, server: ProxyServer, channel: Channel) -> Bool {
        guard request.method == .GET || request.method == .HEAD else { return false }
        let url: URL
        let key: CacheKey
        // A player asks for range after range of one URL on a connection: parse and hash it once.
        if let last = lastMedia, last.uri == request.uri {
            (url, key) = (last.url, last.key)
        } else {
            guard case .media(let media) = Self.target(of: request, server: server) else { return false }
            (url, key) = (media, CacheKey(url: media))
            lastMedia = (request.uri, url, key)
        }
        let started = Date()
        let clock = ContinuousClock.now
        let isGet = request.method == .GET
        var planned: Plan?
        let copy = server.loader.openSettledCopy(url: url, key: key) { info in
            // A playlist is sent rewritten, never as its cached bytes.
            guard let length = info.contentLength, !HLSPlaylistParser.isPlaylist(url: url, contentType: info.contentType)
            else { return nil }
            let plan = Self.plan(request, info, length: length)
            planned = plan
            return isGet ? plan.range.map { $0.lowerBound..<($0.upperBound + 1) } : nil
        }
        guard let copy else { return false }
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: copy.descriptor)
        guard let plan = planned else {
            try? handle.close()
            return false
        }
        let head = HTTPResponseHead(version: .http1_1, status: plan.status, headers: plan.headers)
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        let bytes = Int64(copy.range?.count ?? 0)
        if let range = copy.range, !range.isEmpty {
            let region = FileRegion(
                fileHandle: handle, readerIndex: Int(range.lowerBound), endIndex: Int(range.upperBound))
            channel.write(HTTPServerResponsePart.body(.fileRegion(region))).whenComplete { _ in try? handle.close() }
        } else {
            try? handle.close()
        }
        let keepAlive = request.isKeepAlive
        let onAccess = server.onAccess
        channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { result in
            if !keepAlive { channel.close(promise: nil) }
            guard let onAccess else { return }
            let elapsed = ContinuousClock.now - clock
            let sent: Int64 = if case .success = result { bytes } else { 0 }
            onAccess(ProxyAccess(
                time: started, method: request.method.rawValue, url: OriginURL.withoutCredentials(url).absoluteString,
                range: request.headers.first(name: "range"), status: Int(plan.status.code), bytes: sent,
                outcome: .hit,
                duration: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        }
        return true
    }
}
