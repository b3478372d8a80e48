import CNcurses
import Foundation

/// Asks the terminal what it can do before curses takes it over: kitty's graphics query, the cell size and DA1,
/// read back in raw mode for at most `timeoutMs` (the DA1 answer, which every terminal sends, ends the wait early).
enum TerminalProbe {
    /// The answers (empty when stdin or stdout is not a terminal, or nothing came in time).
    static func ask(environment: [String: String], timeoutMs: Int = 300) -> TerminalAnswers {
        guard isatty(0) == 1, isatty(1) == 1 else { return TerminalAnswers() }
        var saved = termios()
        guard tcgetattr(0, &saved) == 0 else { return TerminalAnswers() }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        _ = tcsetattr(0, TCSANOW, &raw)
        // Whatever came back and was not read (an answer cut short by the timeout) must not reach curses as keys:
        // an ESC would quit.
        defer {
            _ = tcflush(0, TCIFLUSH)
            _ = tcsetattr(0, TCSANOW, &saved)
        }
        let query = TerminalAnswers.query(environment: environment)
        _ = query.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(Double(timeoutMs) / 1000)
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let left = Int(deadline.timeIntervalSinceNow * 1000)
            guard left > 0 else { break }
            var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(left)) > 0 else { break }
            let count = read(0, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[0..<count]
            if TerminalAnswers.parse(received).complete { break }
        }
        return TerminalAnswers.parse(received)
    }

    /// A cell's pixel size from `TIOCGWINSZ`, nil when the terminal reports none.
    static func windowCell() -> CellPixels? {
        var (columns, rows, width, height): (Int32, Int32, Int32, Int32) = (0, 0, 0, 0)
        guard stories_window_size(1, &columns, &rows, &width, &height) == 0, columns > 0, rows > 0, width > 0,
            height > 0
        else { return nil }
        return CellPixels(width: Int(width / columns), height: Int(height / rows))
    }
}
