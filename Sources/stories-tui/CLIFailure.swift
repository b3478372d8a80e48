import ArgumentParser
import Foundation
import Logging

/// A failure reported as one line on stderr with a chosen exit code (2 for bad input).
struct CLIFailure: Error, CustomStringConvertible {
    let message: String
    let exitCode: Int32

    var description: String { message }
}

extension CLIFailure {
    /// Prints the message and exits; used instead of letting ArgumentParser print usage for runtime failures.
    func exit() -> Never {
        StandardStreams.writeError("stories-tui: \(message)\n")
        Foundation.exit(exitCode)
    }
}

/// Logging set-up for the command line: warnings and above on stderr.
enum CLILogging {
    /// `quiet`: only critical messages unless STORIES_LOG_LEVEL asks for more (stderr lines would tear the
    /// terminal UI; it shows failures on screen instead).
    static func logger(quiet: Bool = false) -> Logger {
        var logger = Logger(label: "stories-tui") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = CLIEnvironment.variables["STORIES_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) }
            ?? (quiet ? .critical : .warning)
        return logger
    }
}

/// Runs `body`, turning a `CLIFailure` into one stderr line and its exit code.
func reportingFailures<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let failure as CLIFailure {
        failure.exit()
    }
}
