import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

@testable import stories_tui

/// Budgets a user sets: flags over environment variables over the config file over the defaults.
@Suite struct BudgetTests {
    @Test func sizesAndAgesReadAsPeopleWriteThem() {
        #expect(Budgets.parseSize("500MB") == 500_000_000)
        #expect(Budgets.parseSize("1.5G") == 1_500_000_000)
        #expect(Budgets.parseSize("64 MiB") == 67_108_864)
        #expect(Budgets.parseSize("123456") == 123_456)
        #expect(Budgets.parseSize("5XB") == nil && Budgets.parseSize("-1GB") == nil && Budgets.parseSize("") == nil)
        #expect(Budgets.parseDuration("12h") == 43_200)
        #expect(Budgets.parseDuration("2d") == 172_800)
        #expect(Budgets.parseDuration("1w") == 604_800)
        #expect(Budgets.parseDuration("soon") == nil)
        #expect(AgeFormat.string(172_800) == "2d" && AgeFormat.string(5_400) == "1.5h")
    }

    @Test func layersAndWhereEachValueCameFrom() throws {
        let home = TemporaryDirectory()
        defer { home.cleanup() }
        let folder = home.url.appendingPathComponent("stories-tui")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(#"{"maxSize": "3GB", "maxAge": "1w", "minFree": 0}"#.utf8)
            .write(to: folder.appendingPathComponent("config.json"))
        let environment = ["XDG_CONFIG_HOME": home.path, "STORIES_MAX_AGE": "2d"]
        let resolved = try Budgets.resolve(flags: [.maxEntries: "10"], environment: environment)
        #expect(resolved.configuration.partialByteLimit + resolved.configuration.completeByteLimit == 3_000_000_000)
        #expect(resolved.configuration.completeMaxAge == 172_800, "the environment beats the file")
        #expect(resolved.configuration.maxEntries == 10)
        #expect(resolved.configuration.minimumFreeDiskBytes == 0)
        #expect(resolved.sources[.maxEntries] == "--max-entries")
        #expect(resolved.sources[.maxAge] == "STORIES_MAX_AGE")
        #expect(resolved.sources[.maxSize]?.hasSuffix("config.json: maxSize") == true)
        let flagWins = try Budgets.resolve(flags: [.maxAge: "12h"], environment: environment)
        #expect(flagWins.configuration.partialMaxAge == 43_200)
        try Data(#"{"maxsize": "3GB"}"#.utf8).write(to: folder.appendingPathComponent("config.json"))
        #expect(throws: CLIFailure.self) { try Budgets.resolve(environment: environment) }
    }

    @Test func commandsKeepToTheBudgetsAndStatsShowsThem() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        for name in ["a", "b", "c"] { origin.set(OriginResource(bytes: content(300_000)), at: "/\(name).bin") }
        let urls = ["a", "b", "c"].map { origin.url("\($0).bin").absoluteString }
        let prefetch = try await CLI.run(["prefetch"] + urls + ["--full", "--max-entries", "2", "--cache-dir", cache.path])
        #expect(prefetch.status == 0, "\(prefetch.stderr)")
        let listed = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache.path])
        let rows = try #require(try JSONSerialization.jsonObject(with: listed.stdout) as? [[String: Any]])
        #expect(rows.count == 2, "--max-entries 2 keeps two videos")

        let stats = try await CLI.run(
            ["cache", "stats", "--cache-dir", cache.path], environment: ["STORIES_MAX_SIZE": "900MB"])
        #expect(stats.text.contains("max size 900.0 MB [STORIES_MAX_SIZE]"), "\(stats.text)")
        let bad = try await CLI.run(["fetch", urls[0], "--max-size", "5XB", "--cache-dir", cache.path])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--max-size: '5XB' is not a size"), "\(bad.stderr)")
        await origin.shutdown()
    }
}
