/// Tells keys from the terminal's answers to queries (device attributes, cell size, kitty graphics) that arrive
/// after the start-up probe stopped waiting for them — a loaded machine, a slow link: read as keys, `ESC [ ? 1 ; 2 c`
/// would jump to story 1, then 2, and toggle the cache pane. Control sequences (`ESC [` … final byte) and control
/// strings (`ESC P`, `ESC _`, `ESC ]`, `ESC ^` … `ESC \` or BEL) are swallowed whole; an `ESC` with nothing after it
/// is the Escape key. A value: fed one character at a time, tested without a terminal.
public struct TerminalReplyFilter: Sendable, Equatable {
    /// What a character (or the end of a short wait) means.
    public enum Outcome: Sendable, Equatable {
        /// A key.
        case key(UInt32)
        /// The Escape key.
        case escape
    }

    private enum State: Sendable, Equatable {
        case idle
        case escape
        case sequence
        case string
        case stringEscape
    }

    private var state = State.idle

    /// A filter expecting keys.
    public init() {}

    /// True while in the middle of something that began with `ESC`: the reader should wait a moment for the rest.
    public var isPending: Bool { state != .idle }

    /// What `value` means, in order (nothing while a sequence is being swallowed).
    public mutating func feed(_ value: UInt32) -> [Outcome] {
        switch state {
        case .idle:
            if value == 27 {
                state = .escape
                return []
            }
            return [.key(value)]
        case .escape:
            switch value {
            case 0x5B:  // [
                state = .sequence
                return []
            case 0x50, 0x5F, 0x5D, 0x5E:  // P _ ] ^
                state = .string
                return []
            case 27:
                return [.escape]  // the first Escape on its own; the second starts anew
            default:
                state = .idle
                return [.escape, .key(value)]
            }
        case .sequence:
            // Parameter and intermediate bytes go on; a final byte (or anything unexpected) ends it.
            if (0x20...0x3F).contains(value) { return [] }
            state = .idle
            return []
        case .string:
            if value == 7 { state = .idle } else if value == 27 { state = .stringEscape }
            return []
        case .stringEscape:
            state = value == 0x5C ? .idle : .string
            return []
        }
    }

    /// Nothing more came for a moment: an `ESC` on its own was the Escape key; a sequence cut short is dropped.
    public mutating func timedOut() -> Outcome? {
        defer { state = .idle }
        return state == .escape ? .escape : nil
    }
}
