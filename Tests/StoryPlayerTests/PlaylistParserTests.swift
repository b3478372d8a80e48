import Foundation
import Testing

@testable import StoryPlayer

@Suite struct PlaylistParserTests {
    private let file = URL(fileURLWithPath: "/demo/playlist.json")

    private func parse(_ text: String) throws(PlaylistError) -> Playlist {
        try PlaylistParser.parse(Data(text.utf8), name: "playlist.json", file: file)
    }

    @Test func aValidPlaylistResolvesRelativeURLs() throws {
        let playlist = try parse("""
            { "title": "Lunch stories", "stories": [
              { "id": "intro", "title": "Welcome", "url": "videos/intro.mp4", "maxViews": 3 },
              { "id": "tikka", "url": "https://cdn.example.com/tikka.mp4", "duration": 15 } ] }
            """)
        #expect(playlist.title == "Lunch stories")
        #expect(playlist.stories.map(\.id) == ["intro", "tikka"])
        #expect(playlist.stories[0].source == .local(path: "videos/intro.mp4", file: URL(fileURLWithPath: "/demo/videos/intro.mp4")))
        #expect(playlist.stories[0].maxViews == 3)
        #expect(playlist.stories[1].title == "tikka")
        #expect(playlist.stories[1].duration == 15)
        #expect(playlist.stories[1].source == .remote(URL(string: "https://cdn.example.com/tikka.mp4")!))
        #expect(playlist.hasLocalStories)
    }

    /// A playlist may ask for its local files to be served over a simulated link; without it they are read from
    /// disk like files named on the command line.
    @Test func aPlaylistAsksForASimulatedLinkByName() throws {
        #expect(try parse(#"{"stories": [{"id": "a", "url": "a.mp4"}]}"#).network == nil)
        #expect(try parse(#"{"network": " 4G ", "stories": [{"id": "a", "url": "a.mp4"}]}"#).network == "4g")
        #expect {
            _ = try parse(#"{"network": 4, "stories": [{"id": "a", "url": "a.mp4"}]}"#)
        } throws: { error in
            (error as? PlaylistError)?.description
                == #"playlist.json: network: must be the name of a simulated link such as "4g", found a number"#
        }
    }

    @Test func absolutePathsFileURLsAndPathsOutsideTheFolderNameFilesWhereTheyAre() throws {
        let playlist = try parse("""
            { "stories": [ { "id": "a", "url": "/clips/a.mp4" }, { "id": "b", "url": "file:///clips/b%20c.mp4" },
              { "id": "c", "url": "../elsewhere/c.mp4" } ] }
            """)
        #expect(playlist.stories.map(\.source) == [
            .local(path: "/clips/a.mp4", file: URL(fileURLWithPath: "/clips/a.mp4")),
            .local(path: "/clips/b c.mp4", file: URL(fileURLWithPath: "/clips/b c.mp4")),
            .local(path: "/elsewhere/c.mp4", file: URL(fileURLWithPath: "/elsewhere/c.mp4")),
        ])
        // Served at their own paths: the origin serves their folders, and no root.
        #expect(playlist.localRoot == nil)
        #expect(playlist.localFolders.map(\.path) == ["/clips", "/elsewhere"])
    }

    @Test func authorsGroupTheirStoriesInOrder() throws {
        let playlist = try parse("""
            { "title": "Friends", "authors": [
              { "name": "Ana", "stories": [ { "id": "a1", "url": "ana/1.mp4" }, { "id": "a2", "url": "ana/2.jpg" } ] },
              { "name": "Ben", "stories": [ { "id": "b1", "url": "https://cdn.example.com/b1.mp4" } ] } ] }
            """)
        #expect(playlist.stories.map(\.id) == ["a1", "a2", "b1"])
        #expect(playlist.stories.map(\.author) == ["Ana", "Ana", "Ben"])
        #expect(playlist.authors == [AuthorGroup(name: "Ana", stories: 0..<2), AuthorGroup(name: "Ben", stories: 2..<3)])
        #expect(playlist.localRoot?.path == "/demo")
    }

    @Test func blankTitlesFallBackToTheIdAndTheFileName() throws {
        let playlist = try parse("""
            { "title": "  ", "stories": [ { "id": "intro", "title": "", "url": "https://cdn.example.com/a.mp4" } ] }
            """)
        #expect(playlist.title == "playlist")
        #expect(playlist.stories[0].title == "intro")
    }

    static let malformed: [(String, String)] = [
        ("", "playlist.json: is not valid JSON"),
        ("not json", "playlist.json: is not valid JSON"),
        ("[1, 2]", "playlist.json: must be a JSON object with \"title\" and \"stories\" (or \"authors\"), found a list"),
        (#"{"title": "x"}"#, "playlist.json: stories: is missing (add a list of stories, or a list of authors with theirs)"),
        (#"{"stories": {}}"#, "playlist.json: stories: must be a list, found an object"),
        (#"{"stories": []}"#, "playlist.json: stories: is empty (add at least one story)"),
        (#"{"title": 5, "stories": [{"id": "a", "url": "a.mp4"}]}"#, "playlist.json: title: must be a string, found a number"),
        (#"{"stories": ["a.mp4"]}"#, "playlist.json: stories[0]: must be an object, found a string"),
        (#"{"stories": [{"url": "a.mp4"}]}"#, "playlist.json: stories[0].id: is missing (give each story an id)"),
        (#"{"stories": [{"id": 7, "url": "a.mp4"}]}"#, "playlist.json: stories[0].id: must be a string, found a number"),
        (#"{"stories": [{"id": "a", "url": "a.mp4"}, {"id": "a", "url": "b.mp4"}]}"#,
         "playlist.json: stories[1] (\"a\").id: duplicates stories[0]'s id (ids must be unique)"),
        (#"{"stories": [{"id": "a"}]}"#, "playlist.json: stories[0] (\"a\").url: is missing (add the video's URL)"),
        (#"{"stories": [{"id": "a", "url": ""}]}"#,
         "playlist.json: stories[0] (\"a\").url: is empty (use an http(s) URL or a path relative to the playlist)"),
        (#"{"stories": [{"id": "a", "url": "ftp://x/a.mp4"}]}"#,
         "playlist.json: stories[0] (\"a\").url: unsupported scheme 'ftp' (use http, https, file or a relative path)"),
        (#"{"stories": [{"id": "a", "url": "http://"}]}"#, "playlist.json: stories[0] (\"a\").url: 'http://' is not a valid URL"),
        (#"{"stories": [{"id": "a", "url": "file://host/a.mp4"}]}"#,
         "playlist.json: stories[0] (\"a\").url: 'file://host/a.mp4' is not a valid file URL"),
        (#"{"stories": [{"id": "a", "url": "a.mp4"}], "authors": []}"#,
         "playlist.json: has both \"stories\" and \"authors\""),
        (#"{"authors": []}"#, "playlist.json: authors: is empty (add at least one author)"),
        (#"{"authors": [{"stories": []}]}"#, "playlist.json: authors[0].name: is missing (give each author a name)"),
        (#"{"authors": [{"name": "Ana"}]}"#, "playlist.json: authors[0] (\"Ana\").stories: is missing"),
        (#"{"authors": [{"name": "Ana", "stories": []}]}"#,
         "playlist.json: authors[0].stories: is empty (add at least one story)"),
        (#"{"authors": [{"name": "Ana", "stories": [{"id": "a", "url": "a.mp4"}]}, {"name": "Ana", "stories": []}]}"#,
         "playlist.json: authors[1].name: 'Ana' is named twice"),
        (#"{"authors": [{"name": "A", "stories": [{"id": "a", "url": "a.mp4"}]}, {"name": "B", "stories": [{"id": "a", "url": "b.mp4"}]}]}"#,
         "playlist.json: authors[1].stories[0] (\"a\").id: duplicates authors[0].stories[0]'s id"),
        (#"{"stories": [{"id": "a", "url": "a.mp4", "maxViews": 0}]}"#,
         "playlist.json: stories[0] (\"a\").maxViews: must be at least 1, found 0"),
        (#"{"stories": [{"id": "a", "url": "a.mp4", "maxViews": 2.5}]}"#,
         "playlist.json: stories[0] (\"a\").maxViews: must be a whole number, found 2.5"),
        (#"{"stories": [{"id": "a", "url": "a.mp4", "maxViews": "3"}]}"#,
         "playlist.json: stories[0] (\"a\").maxViews: must be a whole number, found a string"),
        (#"{"stories": [{"id": "a", "url": "a.mp4", "duration": -4}]}"#,
         "playlist.json: stories[0] (\"a\").duration: must be more than 0 seconds, found -4"),
        (#"{"stories": [{"id": "a", "url": "a.mp4", "duration": true}]}"#,
         "playlist.json: stories[0] (\"a\").duration: must be a number of seconds, found a boolean"),
        // Where a syntax error is, by line and column; commas that close nothing; keys the playlist does not know.
        ("{\n  \"title\": \"x\",\n  \"stories\": tru\n}",
         "playlist.json: is not valid JSON (Invalid value at line 3, column 17"),
        ("{\n  \"stories\": [\n    {\"id\": \"a\", \"url\": \"a.mp4\"},\n  ]\n}",
         "playlist.json: is not valid JSON (a comma before ']' at line 3, column 32: remove it)"),
        (#"{"stories": [{"id": "a", "url": "a.mp4",}]}"#,
         "playlist.json: is not valid JSON (a comma before '}' at line 1, column 40: remove it)"),
        (#"{"title": "x", "storys": [{"id": "a", "url": "a.mp4"}]}"#,
         "playlist.json: storys: is not a field of a playlist (did you mean \"stories\"? the fields are title, stories, authors and network)"),
        (#"{"stories": [{"id": "a", "URL": "a.mp4"}]}"#,
         "playlist.json: stories[0].URL: is not a field of a story (did you mean \"url\"? the fields are id, title, url, maxViews, duration and captions)"),
        (#"{"authors": [{"name": "Ana", "story": []}]}"#,
         "playlist.json: authors[0].story: is not a field of an author (did you mean \"stories\"?"),
    ]

    @Test(arguments: malformed)
    func malformedPlaylistsGetTheirOwnMessage(text: String, expected: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.hasPrefix(expected), "got: \(error.description)")
            #expect(!error.description.contains("\n"))
        }
    }

    @Test func invalidUTF8AndMissingFilesAreNamed() throws {
        do {
            _ = try PlaylistParser.parse(Data([0x7b, 0xff, 0xfe, 0x7d]), name: "p.json", file: file)
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.description == "p.json: is not valid UTF-8 text (save it as UTF-8)")
        }
        do {
            _ = try PlaylistParser.load(path: "/nonexistent/playlist.json")
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.description == "/nonexistent/playlist.json: no such file (pass the path of a playlist JSON file)")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("list.json").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(#"{"stories":[{"id":"a","url":"gone.mp4"}]}"#.utf8)))
        do {
            _ = try PlaylistParser.load(path: path)
            Issue.record("accepted a missing video")
        } catch {
            #expect(error.description.hasPrefix("\(path): stories[0] (\"a\").url: 'gone.mp4' does not exist next to the playlist"))
        }
    }

    @Test func theBundledPlaylistIsValid() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let playlist = try PlaylistParser.load(path: root.appendingPathComponent("assets/playlist.json").path)
        #expect(playlist.stories.count >= 3)
        #expect(playlist.stories.allSatisfy { if case .local = $0.source { true } else { false } })
    }
}
