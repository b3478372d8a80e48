import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Network failures in words: "connection refused (127.0.0.1:8181)", never a library's error dump.
enum NetworkFailure {
    /// Why `url` could not be reached or read, as a short phrase naming the host and port where that helps.
    static func reason(_ error: any Error, url: URL) -> String {
        let place = "\(url.host ?? "?"):\(url.port ?? (url.scheme == "https" ? 443 : 80))"
        if let connection = error as? NIOConnectionError {
            if connection.dnsAError != nil || connection.dnsAAAAError != nil {
                return "host name not found (\(connection.host))"
            }
            if let first = connection.connectionErrors.first {
                return reason(first.error, url: url)
            }
            return "cannot connect (\(place))"
        }
        if let io = error as? IOError { return reason(errno: io.errnoCode, place: place) }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout: return "no answer within the connect timeout (\(place))"
            case .remoteConnectionClosed: return "the origin closed the connection (\(place))"
            case .readTimeout: return "the origin stopped sending (\(place))"
            case .deadlineExceeded: return "the request took too long (\(place))"
            default: break
            }
        }
        if let channel = error as? ChannelError {
            switch channel {
            case .connectTimeout: return "no answer within the connect timeout (\(place))"
            case .eof, .alreadyClosed, .ioOnClosedChannel, .outputClosed, .inputClosed:
                return "the origin closed the connection (\(place))"
            default: break
            }
        }
        if error is SocketAddressError { return "host name not found (\(url.host ?? "?"))" }
        // Something else: its own words, trimmed of the error type's wrapping.
        return "\(error)"
    }

    private static func reason(errno code: Int32, place: String) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused (\(place))"
        case ETIMEDOUT: return "connection timed out (\(place))"
        case EHOSTUNREACH, ENETUNREACH: return "no route to the host (\(place))"
        case ECONNRESET: return "connection reset by the origin (\(place))"
        case EPIPE: return "the origin closed the connection (\(place))"
        default: return "\(String(cString: strerror(code))) (\(place))"
        }
    }
}
