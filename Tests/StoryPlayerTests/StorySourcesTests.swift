import Foundation
import Testing

@testable import StoryPlayer

/// What the command line can name: folders, files, URLs, M3U lists, HLS playlists and JSON playlists.
@Suite struct StorySourcesTests {
    /// A fresh folder with `files` (paths relative to it) holding `contents`.
    private func folder(_ files: [String: String]) throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sources-\(UUID().uuidString)")
        for (path, text) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        return root
    }

    private func load(_ arguments: [String], in directory: URL) throws(PlaylistError) -> StorySources {
        try StorySources.load(arguments, directory: directory)
    }

    @Test func aFolderPlaysItsMediaInNaturalNameOrderAndSkipsTheRest() throws {
        let root = try folder([
            "IMG_10.mp4": "x", "IMG_2.jpg": "x", "img_1.MOV": "x", "notes.txt": "x", "thumbs.db": "x", ".hidden.mp4": "x",
        ])
        let read = try load(["."], in: root)
        #expect(read.playlist.stories.map(\.title) == ["img_1.MOV", "IMG_2.jpg", "IMG_10.mp4"])
        #expect(read.playlist.stories.allSatisfy { $0.author == nil })
        #expect(read.playlist.title == root.lastPathComponent)
        #expect(read.skippedNote == "skipped 2 files (2 not media)")
        // Each named, with why, in the order met.
        let base = root.standardizedFileURL.path
        #expect(read.skippedFiles == [
            .init(path: base + "/notes.txt", reason: "not media"), .init(path: base + "/thumbs.db", reason: "not media"),
        ], "\(read.skippedFiles)")
        #expect(!read.isJSONOnly)
        // Served at their own paths, from the folder.
        #expect(read.playlist.localFolders.map(\.path) == [root.standardizedFileURL.path])
        #expect(read.playlist.localRoot == nil)
    }

    @Test func naturalOrderComparesNumbersAsNumbers() {
        let names = ["IMG_10.jpg", "IMG_2.jpg", "img_1.jpg", "IMG_002b.jpg", "a", "A10", "a9"]
        #expect(names.sorted(by: NaturalOrder.less) == ["a", "a9", "A10", "img_1.jpg", "IMG_2.jpg", "IMG_002b.jpg", "IMG_10.jpg"])
    }

    @Test func eachSubfolderIsAnAuthorNamedAfterIt() throws {
        let root = try folder([
            "mine.mp4": "x", "Ben/2.mp4": "x", "Ben/10.mp4": "x", "Ana/trip/b.jpg": "x", "Ana/a.mp4": "x",
            "Empty/readme.md": "x",
        ])
        let read = try load([root.path], in: root)
        #expect(read.playlist.stories.map(\.title) == ["mine.mp4", "a.mp4", "b.jpg", "2.mp4", "10.mp4"])
        #expect(read.playlist.authors.map(\.name) == [root.lastPathComponent, "Ana", "Ben"])
        #expect(read.playlist.authors.map(\.stories) == [0..<1, 1..<3, 3..<5])
        #expect(read.skipped == ["not media": 1])
    }

    @Test func hlsPartsInAFolderAreOneStory() throws {
        let root = try folder([
            "clip.mp4": "x",
            "hls/master.m3u8": "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv0/index.m3u8\n",
            "hls/v0/index.m3u8": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg0.ts\n#EXTINF:2,\nseg1.ts\n",
            "hls/v0/seg0.ts": "x", "hls/v0/seg1.ts": "x",
        ])
        let read = try load([root.path], in: root)
        #expect(read.playlist.stories.map(\.title) == ["clip.mp4", "master.m3u8"])
        #expect(read.playlist.stories.map(\.author) == [root.lastPathComponent, "hls"])
    }

    @Test func filesURLsAndListsMixInTheOrderGiven() throws {
        let root = try folder([
            "a.mp4": "x", "b.webp": "x", "clips/c.mp4": "x", "clips/d.jpg": "x", "clips/readme.txt": "x",
            "list.m3u": "#EXTM3U\n#EXTINF:5,Sunset at the pier\nclips/c.mp4\n# a comment\n\(" ")/nowhere/gone.mp4\nclips/d.jpg\nhttps://cdn.example.com/e.mp4\nclips/readme.txt\n",
            "live.m3u8": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg0.ts\n",
        ])
        let read = try load(["a.mp4", "https://cdn.example.com/x/y.mp4", "list.m3u", "live.m3u8", "b.webp"], in: root)
        #expect(read.playlist.stories.map(\.title) == ["a.mp4", "y.mp4", "Sunset at the pier", "d.jpg", "e.mp4", "live.m3u8", "b.webp"])
        #expect(read.playlist.stories[1].source == .remote(URL(string: "https://cdn.example.com/x/y.mp4")!))
        let file = root.appendingPathComponent("clips/c.mp4").standardizedFileURL
        #expect(read.playlist.stories[2].source == .local(path: file.path, file: file))
        #expect(read.playlist.title == "Stories")
        // The missing file and the text file in the list are counted, not played.
        #expect(read.skipped == ["missing": 1, "not media": 1])
        #expect(Set(read.playlist.stories.map(\.id)).count == 7)
    }

    /// Files and URLs named one by one are the person's choice and order: a run starts at the first named (seen
    /// or not). A folder, a list or a playlist among them resumes at the first unseen story as before.
    @Test func storiesNamedOneByOneStartAtTheFirst() throws {
        let root = try folder(["a.mp4": "x", "b.mp4": "x", "x.txt": "x", "clips/d.mp4": "x", "l.m3u": "a.mp4\n"])
        #expect(try load(["a.mp4", "b.mp4", "https://cdn.example.com/e.mp4"], in: root).namesStories)
        #expect(try !load(["a.mp4", "clips"], in: root).namesStories)
        #expect(try !load(["l.m3u"], in: root).namesStories)
        #expect(try !load(["a.mp4", "x.txt", "b.mp4"], in: root).namesStories)
    }

    @Test func aJSONPlaylistAloneIsReadAsBefore() throws {
        let root = try folder([
            "v/a.mp4": "x",
            "p.json": #"{"title": "Lunch", "authors": [{"name": "Ana", "stories": [{"id": "a", "url": "v/a.mp4"}]}]}"#,
        ])
        let read = try load(["p.json"], in: root)
        #expect(read.isJSONOnly)
        #expect(read.playlist.title == "Lunch")
        #expect(read.playlist.stories[0].source == .local(path: "v/a.mp4", file: root.appendingPathComponent("v/a.mp4").standardizedFileURL))
        // Beside another source, its files are served at their own paths.
        let mixed = try load(["p.json", "v/a.mp4"], in: root)
        #expect(mixed.playlist.stories.map(\.source) == Array(repeating: .local(
            path: root.appendingPathComponent("v/a.mp4").standardizedFileURL.path,
            file: root.appendingPathComponent("v/a.mp4").standardizedFileURL), count: 2))
        #expect(mixed.playlist.stories.map(\.author) == ["Ana", nil])
    }

    static let refused: [([String], String)] = [
        (["nowhere.mp4"], "nowhere.mp4: no such file or folder"),
        (["ftp://x/a.mp4"], "ftp://x/a.mp4: unsupported scheme 'ftp' (use http, https, file or a path)"),
        ([], "no source given"),
        (["empty"], "nothing to play in 'empty': add videos or photos"),
        (["text"], "nothing to play in 'text' (skipped 2 files (2 not media)): add videos or photos"),
        (["notes.txt"], "nothing to play in 'notes.txt' (skipped 1 file (1 not media)): add videos or photos"),
        (["broken.json"], "broken.json: is not valid JSON"),
    ]

    @Test(arguments: refused)
    func sourcesThatCannotPlayFailInOneSentence(arguments: [String], expected: String) throws {
        let root = try folder(["text/a.txt": "x", "text/b.pdf": "x", "notes.txt": "x", "broken.json": "{"])
        try FileManager.default.createDirectory(at: root.appendingPathComponent("empty"), withIntermediateDirectories: true)
        do {
            _ = try load(arguments, in: root)
            Issue.record("accepted \(arguments)")
        } catch {
            #expect(error.description.hasPrefix(expected), "got: \(error.description)")
            #expect(!error.description.contains("\n"))
        }
    }

    @Test func aLinkThatLoopsIsCountedNotFollowedForever() throws {
        let root = try folder(["Ana/a.mp4": "x"])
        try FileManager.default.createSymbolicLink(
            at: root.appendingPathComponent("Ana/again"), withDestinationURL: root.appendingPathComponent("Ana"))
        try FileManager.default.createSymbolicLink(
            at: root.appendingPathComponent("Ana/gone.mp4"), withDestinationURL: root.appendingPathComponent("nothing.mp4"))
        let read = try load([root.path], in: root)
        #expect(read.playlist.stories.map(\.title) == ["a.mp4"])
        #expect(read.skipped["in a folder seen twice (a link that loops)"] == 1)
        #expect(read.skipped["missing (a broken link)"] == 1)
    }

    @Test func fileURLsNameLocalFiles() throws {
        let root = try folder(["my clip.mp4": "x"])
        let file = root.appendingPathComponent("my clip.mp4").standardizedFileURL
        let read = try load([file.absoluteString], in: root)
        #expect(read.playlist.stories.map(\.source) == [.local(path: file.path, file: file)])
    }
}
