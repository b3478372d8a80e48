import Foundation
import Synchronization
import NIOConcurrencyHelpers
import Testing

@testable import Terminal

/// The screen's wait for keys ends when its players have something new to show (a first frame decoded), not at
/// the end of its interval; keys still end it.
struct TerminalWakeTests {
    /// Runs `wake.wait` on a thread of its own (as the terminal's); its answer once it returns. The wait's own
    /// limit (an hour) is far past the checks' deadlines, so a test's tasks held up on a loaded machine never see
    /// the wait end by its time and take that for "no key".
    static func waiting(
        _ wake: TerminalWake, input: Int32, thread: NIOLockedValueBox<pthread_t?>? = nil
    ) -> NIOLockedValueBox<Bool?> {
        let answer = NIOLockedValueBox<Bool?>(nil)
        Thread {
            if let thread {
                // Threads made from the test's tasks start with signals blocked; the terminal's takes them.
                var signals = sigset_t()
                sigemptyset(&signals)
                sigaddset(&signals, SIGUSR2)
                pthread_sigmask(SIG_UNBLOCK, &signals, nil)
                thread.withLockedValue { $0 = pthread_self() }
            }
            let input = wake.wait(input: input, timeoutMs: 3_600_000)
            answer.withLockedValue { $0 = input }
        }.start()
        return answer
    }

    /// Polls `condition` every 5 ms for up to 30 s.
    static func soon(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    @Test func aWakeEndsTheWaitAndKeysStillDo() async throws {
        let wake = try #require(TerminalWake())
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        // Signalled while it waits: the wait ends, with no key.
        let woken = Self.waiting(wake, input: ends[0])
        #expect(await Self.soon { wake.isListening })
        wake.signal()
        #expect(await Self.soon { woken.withLockedValue { $0 } != nil })
        #expect(woken.withLockedValue { $0 } == false)
        // A key: the wait ends, saying so.
        let keyed = Self.waiting(wake, input: ends[0])
        #expect(await Self.soon { wake.isListening })
        var byte: UInt8 = 0x71
        #expect(write(ends[1], &byte, 1) == 1)
        #expect(await Self.soon { keyed.withLockedValue { $0 } != nil })
        #expect(keyed.withLockedValue { $0 } == true)
    }

    /// A signal delivered to the terminal's thread while it waits (a child process ending, a resize) does not
    /// end the wait: it ends with the key that comes after.
    @Test func aSignalDoesNotEndTheWait() async throws {
        let wake = try #require(TerminalWake())
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        signal(SIGUSR2) { _ in Self.interrupts.add(1, ordering: .relaxed) }
        defer { signal(SIGUSR2, SIG_IGN) }
        let thread = NIOLockedValueBox<pthread_t?>(nil)
        let keyed = Self.waiting(wake, input: ends[0], thread: thread)
        #expect(await Self.soon { wake.isListening })
        let waiting = try #require(thread.withLockedValue { $0 })
        let before = Self.interrupts.load(ordering: .relaxed)
        #expect(pthread_kill(waiting, SIGUSR2) == 0)
        #expect(await Self.soon { Self.interrupts.load(ordering: .relaxed) > before })
        var byte: UInt8 = 0x71
        #expect(write(ends[1], &byte, 1) == 1)
        #expect(await Self.soon { keyed.withLockedValue { $0 } != nil })
        #expect(keyed.withLockedValue { $0 } == true)
    }

    /// How many SIGUSR2s the test's handler saw.
    static let interrupts = Atomic<Int>(0)
}
