import CSocketQueue
import NIOCore

/// What a client on this machine has read of what the proxy sent it, from the kernel's socket queues.
///
/// A socket accepts far more than a client reads (its receive buffer alone holds 64 KiB and more), so a proxy that
/// fetched whatever its client's socket would take would pay the origin for bytes a client that stops early (a
/// prober, a player seeking) never reads, on every replay. Before a read that starts an origin request, the proxy
/// waits until its client has taken everything sent so far.
enum ClientReading {
    /// Bytes sent on `channel` that the client has not read; nil when that cannot be known.
    static func unread(_ channel: Channel) -> Int64? {
        guard let local = channel.localAddress, let remote = channel.remoteAddress else { return nil }
        let unread = local.withSockAddr { localAddress, _ in
            remote.withSockAddr { remoteAddress, _ in stories_tcp_unread(localAddress, remoteAddress) }
        }
        return unread < 0 ? nil : Int64(unread)
    }

    /// How long a client that read everything it was sent is given to hang up before the proxy asks the origin
    /// for more (`lingerForClose`).
    static let linger: Duration = .milliseconds(25)

    /// A client that took everything and leaves (a prober that read the 16 KB it wanted at a fragment) closes
    /// within moments; asking the origin at once would pay for bytes already on their way when the close
    /// arrives, on every replay. Waits `linger`; the connection closing meanwhile cancels the wait (it throws).
    /// One wait per origin request a client's reading starts: a player streaming past the cache's edge waits
    /// once there, not per chunk.
    static func lingerForClose(_ channel: Channel) async throws {
        try await Task.sleep(for: linger)
        guard channel.isActive else { throw ChannelError.ioOnClosedChannel }
    }

    /// How often a waiting response looks again.
    static let poll: Duration = .milliseconds(5)

    /// Waits until the client of `channel` has read everything sent to it, or the connection closes (the task is
    /// cancelled). A client that reads nothing for `limit` is let go: throws `ChannelError.outputClosed`.
    static func waitUntilRead(_ channel: Channel, atMost limit: Duration) async throws {
        var last = Int64.max
        var lastChange = ContinuousClock.now
        while let unread = unread(channel), unread > 0 {
            try Task.checkCancellation()
            guard channel.isActive else { throw ChannelError.ioOnClosedChannel }
            if unread != last {
                (last, lastChange) = (unread, ContinuousClock.now)
            } else if ContinuousClock.now - lastChange >= limit {
                throw ChannelError.outputClosed
            }
            try await Task.sleep(for: poll)
        }
    }
}
