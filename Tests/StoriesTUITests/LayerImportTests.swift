import Foundation
import Testing

/// Imports only point down (DESIGN.md's layers), checked on the sources: the build's import check lets a module
/// that another dependency brings in pass unnoticed, so what each layer may never name is listed here.
@Suite struct LayerImportTests {
    /// Modules each target never imports.
    static let forbidden: [String: Set<String>] = [
        "HTTPSemantics": ["MediaCache", "MediaOrigin", "MediaProxy", "MediaFormats", "StoryPlayer", "Following",
            "StoriesUI", "Terminal"],
        "MediaCache": ["MediaOrigin", "MediaProxy", "MediaFormats", "StoryPlayer", "Following", "StoriesUI",
            "Terminal", "CFFmpeg", "CNcurses"],
        "MediaFormats": ["MediaProxy", "StoryPlayer", "Following", "StoriesUI", "Terminal", "GRDB", "CNcurses"],
        "StoryPlayer": ["MediaProxy", "Following", "StoriesUI", "Terminal", "CNcurses", "MediaOrigin"],
        "Following": ["StoriesUI", "Terminal", "CNcurses", "MediaProxy", "GRDB"],
        // The pure view layer gets view values from the story model: no engine, no database, no network.
        "StoriesUI": ["MediaCache", "MediaFormats", "MediaProxy", "MediaOrigin", "Following", "GRDB", "CNcurses",
            "CFFmpeg", "NIOCore", "NIOPosix", "NIOHTTP1", "AsyncHTTPClient"],
        "Terminal": ["MediaCache", "StoryPlayer", "StoriesUI", "Following", "GRDB"],
    ]

    @Test func noLayerImportsOneAboveItOrBeside() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        var checked = 0
        for (target, banned) in Self.forbidden.sorted(by: { $0.key < $1.key }) {
            let root = sources.appendingPathComponent(target)
            let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
            #expect(!files.isEmpty, "\(target) has sources")
            for file in files {
                let text = try String(contentsOf: file, encoding: .utf8)
                for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.hasPrefix("@testable import ") {
                    let module = line.split(separator: " ").last.map(String.init) ?? ""
                    #expect(!banned.contains(module), "\(target)/\(file.lastPathComponent) imports \(module)")
                }
                checked += 1
            }
        }
        #expect(checked > 100)
    }

    /// Inside the engine, the index alone speaks SQL.
    @Test func onlyTheIndexImportsTheDatabase() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/MediaCache")
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        for file in files where try String(contentsOf: file, encoding: .utf8).contains("\nimport GRDB") {
            #expect(file.path.contains("/Store/Index/"), "\(file.lastPathComponent) imports GRDB")
        }
    }
}
