import ArgumentParser
import Testing

@testable import stories_tui

/// The command tree as the program's start-up reads it.
@Suite struct CommandTreeTests {
    /// Every command names itself: a name the parser works out from the type's name costs each run of any command
    /// a reflection pass over that type (1.5 ms of a cached fetch's start-up for two unnamed ones).
    @Test func everyCommandNamesItself() {
        var pending: [any ParsableCommand.Type] = [StoriesTUI.self]
        var seen = 0
        while let command = pending.popLast() {
            seen += 1
            #expect(command.configuration.commandName != nil, "\(command) takes its name from its type")
            pending += command.configuration.subcommands
        }
        #expect(seen >= 8, "the tree lost commands: \(seen)")
    }

    /// A run that will play starts loading FFmpeg before its arguments are parsed; other commands never load it.
    @Test func onlyARunThatPlaysLoadsTheDecoders() {
        let plays: [[String]] = [[], ["play"], ["clip.mp4"], ["--headless", "a/"], ["play", "--help"], ["-x"]]
        let others: [[String]] = [
            ["fetch", "http://x/a"], ["cache", "stats"], ["serve"], ["prefetch"], ["follow", "ls"], ["help"], ["--help"],
            ["-h"], ["--version"],
        ]
        for arguments in plays { #expect(StoriesTUI.willPlay(arguments[...]), "\(arguments)") }
        for arguments in others { #expect(!StoriesTUI.willPlay(arguments[...]), "\(arguments)") }
    }
}
