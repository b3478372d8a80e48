import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A request to the origin under test: its status, headers and whole body.
func get(_ url: URL, headers: [(String, String)] = [], method: HTTPMethod = .GET) async throws
    -> (status: Int, headers: HTTPHeaders, body: [UInt8])
{
    var request = HTTPClientRequest(url: url.absoluteString)
    request.method = method
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
    var body: [UInt8] = []
    for try await chunk in response.body { body.append(contentsOf: chunk.readableBytesView) }
    return (Int(response.status.code), response.headers, body)
}
