import Foundation
import GRDB
import MediaCache
import Testing

@testable import StoryPlayer

/// Play counts kept beside the cache, outside the cache library.
@Suite struct PlayCountStoreTests {
    private func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("plays-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func countsPersistAcrossOpensAndAddUpPerResource() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let video = CacheKey(custom: "video")
        let intro = CacheKey(custom: "story intro"), recap = CacheKey(custom: "story recap")
        do {
            let plays = try PlayCountStore(directory: dir)
            #expect(try plays.record(intro, resource: video) == 1)
            #expect(try plays.record(intro, resource: video) == 2)
            #expect(try plays.record(recap, resource: video) == 1)
        }
        let reopened = try PlayCountStore(directory: dir)
        #expect(try reopened.count(intro) == 2)
        #expect(try reopened.count(CacheKey(custom: "never")) == 0)
        #expect(try reopened.countsByResource() == [video: 3], "two stories playing one video")
        try reopened.removeAll()
        #expect(try reopened.counts().isEmpty)
        #expect(try PlayCountStore.inMemory().counts().isEmpty)
    }

    @Test func countsAnEarlierVersionKeptInTheCacheIndexAreTakenOverOnce() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let story = CacheKey(custom: "story-play\nintro\nvideos/intro.mp4")
        // What earlier versions left: a playCount table in the cache index.
        let index = try DatabaseQueue(path: dir.appendingPathComponent("index.sqlite").path)
        try index.write { db in
            try db.execute(sql: "CREATE TABLE playCount (key TEXT PRIMARY KEY, count INTEGER NOT NULL)")
            try db.execute(sql: "INSERT INTO playCount VALUES (?, 3), ('not-a-key', 9)", arguments: [story.hex])
        }
        // Read through the cache's own interface: the play counts never open its database.
        let store = try CacheStore(directory: dir)
        #expect(store.legacyPlayCounts() == [story: 3], "a key that is not one is left out")
        #expect(try PlayCountStore(directory: dir, earlier: store.legacyPlayCounts).count(story) == 3)
        // Taken over once: a later change to the old table is not read again.
        try index.write { db in try db.execute(sql: "UPDATE playCount SET count = 7") }
        let again = try PlayCountStore(directory: dir, earlier: store.legacyPlayCounts)
        #expect(try again.count(story) == 3)
        #expect(try again.counts().count == 1)
        try store.close()
    }

    @Test func aDamagedFileIsAClearError() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(repeating: 0x41, count: 4096).write(to: dir.appendingPathComponent(PlayCountStore.fileName))
        #expect {
            _ = try PlayCountStore(directory: dir)
        } throws: { error in
            "\(error)".contains("plays.sqlite") && "\(error)".contains("damaged")
        }
    }
}
