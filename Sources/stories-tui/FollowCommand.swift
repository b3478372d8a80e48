import ArgumentParser
import Following
import Foundation
import MediaCache
import StoryPlayer

/// `stories-tui follow add|ls|rm|import|export`: the people a person follows.
struct FollowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow", abstract: "Follow people's feeds and pages; `stories-tui` alone then plays them.",
        discussion: """
            Followed sources are kept as OPML in $XDG_CONFIG_HOME/stories-tui/following.opml (else \
            ~/.config/stories-tui/following.opml). A source is an RSS, Atom or JSON feed (a Mastodon or PeerTube \
            account, a YouTube channel's feed, a podcast with video) or a web page yt-dlp can read.
            """,
        subcommands: [Add.self, List.self, Remove.self, Import.self, Export.self])

    /// `follow add URL [--name NAME]`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Follow a feed or a page (it is read once, to name it and check it).")
        @Argument(help: ArgumentHelp("The feed's or page's http(s) URL.", valueName: "url")) var url: String
        @Option(help: ArgumentHelp("The name shown for the author (default: the feed's title).", valueName: "NAME"))
        var name: String?
        @OptionGroup var cache: CacheDirOption

        func run() async throws {
            try await reportingFailures {
                let parsed: URL
                do {
                    parsed = try OriginURL.parse(url)
                } catch {
                    throw CLIFailure(message: "\(url): \(error)", exitCode: 2)
                }
                if let name, name.trimmingCharacters(in: .whitespaces).isEmpty {
                    throw CLIFailure(message: "--name: must not be empty", exitCode: 2)
                }
                var list = try FollowSettings.loadList()
                if let index = list.index(of: parsed.absoluteString) {
                    throw CLIFailure(message: "\(url) is followed already, as '\(list.entries[index].name)'", exitCode: 2)
                }
                let settings = try FollowSettings.read()
                let store = try cache.openStore()
                let loader = MediaLoader(store: store, configuration: LoaderDefaults.configuration, logger: CLILogging.logger(quiet: true))
                let expander = SourceExpander(loader: loader, pages: settings.pageResolver, since: settings.since)
                let probe = await expander.probe(parsed, name: name)
                await loader.shutdown()
                try? store.close()
                if let refusal = probe.refusal {
                    throw CLIFailure(message: "\(url) \(refusal)", exitCode: 1)
                }
                guard let report = probe.report else { throw CLIFailure(message: "\(url) could not be read", exitCode: 1) }
                var entry = FollowList.Entry(name: report.author, url: parsed, isPage: probe.isPage)
                entry.refreshed = Date()
                entry.newStories = report.stories
                do throws(FeedError) {
                    try list.add(entry)
                } catch {
                    throw CLIFailure(message: error.message, exitCode: 2)
                }
                try FollowSettings.save(list)
                let kind = probe.isPage ? "page" : "feed"
                print("following \(report.author) (\(kind), \(report.items) item\(report.items == 1 ? "" : "s"), "
                    + "\(report.stories) within \(settings.since.map(SinceOption.describe) ?? "all time"))")
            }
        }
    }

    /// `follow ls`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls", abstract: "List followed sources: name, URL, last refresh, new stories, last error.")
        @Flag(help: "Print one JSON object per source.") var json = false

        func run() async throws {
            try await reportingFailures {
                let list = try FollowSettings.loadList()
                if list.entries.isEmpty, !json {
                    print("nothing followed yet (stories-tui follow add URL)")
                    return
                }
                let dates = ISO8601DateFormatter()
                for entry in list.entries {
                    if json {
                        var object: [String: Any] = ["name": entry.name, "url": entry.url.absoluteString, "page": entry.isPage]
                        if let refreshed = entry.refreshed { object["refreshed"] = dates.string(from: refreshed) }
                        if let new = entry.newStories { object["newStories"] = new }
                        if let error = entry.lastError { object["lastError"] = error }
                        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                        print(String(decoding: data, as: UTF8.self))
                        continue
                    }
                    let refreshed = entry.refreshed.map { "refreshed " + AgeText.ago($0, now: Date()) } ?? "never refreshed"
                    let new = entry.newStories.map { "\($0) new" } ?? "-"
                    print("\(entry.name)  \(entry.url.absoluteString)  \(refreshed)  \(new)"
                        + (entry.lastError.map { "  error: \($0)" } ?? ""))
                }
            }
        }
    }

    /// `follow rm NAME|URL`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Stop following a source.")
        @Argument(help: ArgumentHelp("The name or URL of the source.", valueName: "name-or-url")) var source: String

        func run() async throws {
            try await reportingFailures {
                var list = try FollowSettings.loadList()
                guard let index = list.index(of: source) else {
                    let names = list.entries.map(\.name)
                    throw CLIFailure(
                        message: "'\(source)' is not followed"
                            + (names.isEmpty ? "" : " (followed: \(names.prefix(10).joined(separator: ", ")))"),
                        exitCode: 2)
                }
                let removed = list.entries.remove(at: index)
                try FollowSettings.save(list)
                print("stopped following \(removed.name)")
            }
        }
    }

    /// `follow import FILE.opml`.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import", abstract: "Follow every feed an OPML file lists (as feed readers export).")
        @Argument(help: ArgumentHelp("An OPML file.", valueName: "file")) var file: String

        func run() async throws {
            try await reportingFailures {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw CLIFailure(message: "\(file): no such file, or it cannot be read", exitCode: 2)
                }
                let entries: [FollowList.Entry]
                do throws(FeedError) {
                    entries = try FollowList.parseOPML(data)
                } catch {
                    throw CLIFailure(message: "\(file): \(error.message)", exitCode: 2)
                }
                var list = try FollowSettings.loadList()
                var (added, already) = (0, 0)
                for var entry in entries {
                    entry.refreshed = nil
                    entry.newStories = nil
                    entry.lastError = nil
                    if list.index(of: entry.url.absoluteString) != nil {
                        already += 1
                        continue
                    }
                    // A name taken by another source gets its host added.
                    if list.index(of: entry.name) != nil { entry.name += " (\(entry.url.host ?? "?"))" }
                    if (try? list.add(entry)) != nil { added += 1 } else { already += 1 }
                }
                try FollowSettings.save(list)
                print("following \(added) more source\(added == 1 ? "" : "s")"
                    + (already > 0 ? " (\(already) followed already)" : "") + ", \(list.entries.count) in all")
            }
        }
    }

    /// `follow export`.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export", abstract: "Print the followed sources as OPML 2.0.")

        func run() async throws {
            try await reportingFailures {
                print(try FollowSettings.loadList().opml(), terminator: "")
            }
        }
    }
}
