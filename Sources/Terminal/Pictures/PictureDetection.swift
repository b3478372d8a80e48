/// Chooses how pictures are shown from what is known of the terminal: its environment, what curses says of its
/// colours, its answers to the start-up queries and its pixel size. A pure function, tested without a terminal.
public enum PictureDetection {
    /// What the terminal is known by.
    public struct Facts: Sendable, Equatable {
        /// The environment (`TERM`, `TERM_PROGRAM`, `COLORTERM`, `TMUX`, `NO_COLOR`, ...).
        public var environment: [String: String]
        /// The locale's character set is UTF-8.
        public var unicode: Bool
        /// Colours terminfo gives the terminal (0: none, or colours turned off).
        public var colors: Int
        /// Terminfo says the terminal takes 24-bit colours (`RGB` or `Tc`).
        public var terminfoRGB: Bool
        /// What the terminal answered (nothing when it was not asked or did not answer in time).
        public var answers: TerminalAnswers
        /// The cell size from `TIOCGWINSZ` (nil when the terminal reports no pixel size).
        public var windowCell: CellPixels?

        /// Facts.
        public init(
            environment: [String: String], unicode: Bool, colors: Int, terminfoRGB: Bool = false,
            answers: TerminalAnswers = TerminalAnswers(), windowCell: CellPixels? = nil
        ) {
            self.environment = environment
            self.unicode = unicode
            self.colors = colors
            self.terminfoRGB = terminfoRGB
            self.answers = answers
            self.windowCell = windowCell
        }
    }

    /// The output for `facts`; `requested` is the viewer's `--picture` choice (nil: automatic).
    public static func choose(_ facts: Facts, requested: PictureProtocol? = nil) -> PictureOutput {
        let env = facts.environment
        let colors = colorDepth(facts)
        let cell = facts.windowCell ?? facts.answers.cell ?? .assumed
        let sextants = drawsSymbolsItself(env)
        func cells() -> PictureProtocol { facts.unicode ? .symbols : .ascii }
        let picture: PictureProtocol
        if let requested {
            picture = !facts.unicode && (requested == .symbols || requested == .half) ? .ascii : requested
        } else if colors == .none || insideMultiplexer(env) {
            // A multiplexer without passthrough drops or garbles images; cells always arrive.
            picture = cells()
        } else if facts.answers.kittyGraphics {
            picture = .kitty
        } else if facts.answers.sixel {
            picture = .sixel
        } else if !facts.answers.complete, let guessed = guessFromEnvironment(env) {
            // The terminal did not answer in time: what its name says.
            picture = guessed
        } else {
            picture = cells()
        }
        let limit = picture == .sixel ? facts.answers.sixelLimit ?? PictureOutput.assumedSixelLimit : nil
        return PictureOutput(picture: picture, colors: colors, cell: cell, sextants: sextants, imageLimit: limit)
    }

    /// The colours cells can take.
    public static func colorDepth(_ facts: Facts) -> ColorDepth {
        if !(facts.environment["NO_COLOR"] ?? "").isEmpty || facts.colors <= 0 { return .none }
        let colorterm = (facts.environment["COLORTERM"] ?? "").lowercased()
        if colorterm == "truecolor" || colorterm == "24bit" || facts.terminfoRGB { return .truecolor }
        return facts.colors >= 256 ? .palette256 : .palette16
    }

    /// Inside tmux or screen.
    static func insideMultiplexer(_ env: [String: String]) -> Bool {
        let term = env["TERM"] ?? ""
        return env["TMUX"] != nil || term.hasPrefix("tmux") || term.hasPrefix("screen")
    }

    /// Terminals known by name, for when they did not answer.
    static func guessFromEnvironment(_ env: [String: String]) -> PictureProtocol? {
        let term = env["TERM"] ?? ""
        let program = env["TERM_PROGRAM"] ?? ""
        if term == "xterm-kitty" || term == "xterm-ghostty" || program == "ghostty" || program == "WezTerm" {
            return .kitty
        }
        if env["KONSOLE_VERSION"] != nil { return .kitty }
        if term.hasPrefix("foot") || term.hasPrefix("mlterm") || env["WT_SESSION"] != nil { return .sixel }
        return nil
    }

    /// Terminals that draw block and sextant symbols themselves rather than from the font.
    static func drawsSymbolsItself(_ env: [String: String]) -> Bool {
        let term = env["TERM"] ?? ""
        let program = env["TERM_PROGRAM"] ?? ""
        return term == "xterm-kitty" || term.hasPrefix("foot") || term == "xterm-ghostty" || program == "ghostty"
            || program == "WezTerm"
    }
}
