import Foundation
import NIOConcurrencyHelpers

/// The media URLs of stories that are found only when they are about to play (a web page an extractor resolves:
/// the URLs it hands out are signed and expire, so they are never resolved long before). Each story is resolved
/// once per run, by whoever asks first — the controller for the story starting, the preload driver for the ones
/// next in line — and every later ask gets the same answer.
public final class LateSources: Sendable {
    /// What resolving a story gave.
    public enum Outcome: Sendable, Equatable {
        /// Its media URL, and the caption files the page offers.
        case found(URL, captions: [CaptionSource])
        /// Why it cannot play, in one sentence.
        case failed(String)
    }

    private enum Entry {
        case resolving(Task<Outcome, Never>)
        case done(Outcome)
    }

    private let find: @Sendable (Story) async -> Outcome
    private let table = NIOLockedValueBox<[String: Entry]>([:])

    /// Resolves stories with `find` (it bounds its own time and says why it failed).
    public init(find: @escaping @Sendable (Story) async -> Outcome) {
        self.find = find
    }

    /// What is known of `story` now; nil while it was not asked for or is still resolving.
    public func known(_ story: Story) -> Outcome? {
        guard story.resolvesLate else { return nil }
        if case .done(let outcome) = table.withLockedValue({ $0[story.id] }) { return outcome }
        return nil
    }

    /// True when `story` cannot be loaded before it is resolved.
    public func isPending(_ story: Story) -> Bool { story.resolvesLate && known(story) == nil }

    /// Records what is already known of the story `id` (resolved while its source was read).
    public func record(_ outcome: Outcome, forStory id: String) {
        table.withLockedValue { $0[id] = .done(outcome) }
    }

    /// Resolves `story` (once: a second ask waits for the first).
    @discardableResult
    public func resolve(_ story: Story) async -> Outcome {
        let (find, table) = (self.find, self.table)
        let entry = table.withLockedValue { entries -> Entry in
            if let entry = entries[story.id] { return entry }
            // The answer is kept by the task itself: an asker that goes away does not lose it.
            let task = Task {
                let outcome = await find(story)
                table.withLockedValue { $0[story.id] = .done(outcome) }
                return outcome
            }
            entries[story.id] = .resolving(task)
            return .resolving(task)
        }
        switch entry {
        case .done(let outcome): return outcome
        case .resolving(let task): return await task.value
        }
    }
}
