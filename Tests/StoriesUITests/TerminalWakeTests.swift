import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Terminal

/// The screen's wait for keys ends when its players have something new to show (a first frame decoded), not at
/// the end of its interval; keys still end it.
struct TerminalWakeTests {
    /// Runs `wake.wait` on a thread of its own (as the terminal's) for up to a minute; its answer once it returns.
    static func waiting(_ wake: TerminalWake, input: Int32) -> NIOLockedValueBox<Bool?> {
        let answer = NIOLockedValueBox<Bool?>(nil)
        Thread { answer.withLockedValue { $0 = wake.wait(input: input, timeoutMs: 60_000) } }.start()
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
}
