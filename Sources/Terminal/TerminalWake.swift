import Foundation
import NIOConcurrencyHelpers

/// Wakes the terminal's thread from its wait for keys when there is something new to draw (a story's first
/// frame decoded), from any thread: a pipe whose reading end is waited on beside the terminal's input, so the
/// screen need not look at an interval.
public final class TerminalWake: Sendable {
    private let fds: (read: Int32, write: Int32)
    /// Whether the terminal's thread waits long now (nothing moves on screen): wakes are sent only then.
    private let listening = NIOLockedValueBox(false)

    /// A wake with its pipe; nil when no pipe can be made (the screen then looks at its interval, as before).
    public init?() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        fds = (ends[0], ends[1])
    }

    deinit {
        close(fds.read)
        close(fds.write)
    }

    /// Whether the terminal's thread waits now.
    var isListening: Bool { listening.withLockedValue { $0 } }

    /// Wakes the terminal's thread if it is waiting long (a byte in the pipe; one already there is enough).
    public func signal() {
        guard listening.withLockedValue({ $0 }) else { return }
        var byte: UInt8 = 1
        _ = write(fds.write, &byte, 1)
    }

    /// Waits up to `timeoutMs` for input on `input` or a wake; true when input is there. Wakes that came are
    /// used up.
    func wait(input: Int32, timeoutMs: Int) -> Bool {
        listening.withLockedValue { $0 = true }
        defer { listening.withLockedValue { $0 = false } }
        var descriptors = [
            pollfd(fd: input, events: Int16(POLLIN), revents: 0), pollfd(fd: fds.read, events: Int16(POLLIN), revents: 0),
        ]
        // A signal (a child process ending, a resize) interrupts the poll: wait on for what is left, so a wait
        // ends only with input, a wake or its time.
        let deadline = ContinuousClock.now + .milliseconds(timeoutMs)
        var ready = poll(&descriptors, 2, Int32(timeoutMs))
        while ready < 0, errno == EINTR {
            let left = deadline - ContinuousClock.now
            let leftMs = max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            ready = poll(&descriptors, 2, Int32(clamping: leftMs))
        }
        if ready > 0, descriptors[1].revents != 0 {
            var drain = [UInt8](repeating: 0, count: 64)
            while read(fds.read, &drain, drain.count) > 0 {}
        }
        return ready > 0 && descriptors[0].revents != 0
    }
}
