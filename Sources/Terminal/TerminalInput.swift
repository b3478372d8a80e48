/// Something the terminal reported.
public enum TerminalInput: Sendable, Equatable {
    /// A printable key or control character.
    case character(Character)
    /// ←.
    case left
    /// →.
    case right
    /// Shift+←.
    case shiftLeft
    /// Shift+→.
    case shiftRight
    /// ↑.
    case up
    /// ↓.
    case down
    /// Escape on its own.
    case escape
    /// A mouse button press at column `x`, row `y`.
    case click(x: Int, y: Int)
    /// The terminal changed size.
    case resize
}
