import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The cache on a real small disk (a tmpfs mounted for the test): filled to the last byte, then read-only.
/// Needs root; where mounting is not allowed the test says so and skips, even in CI (nothing to fix there).
@Suite(.serialized) struct SmallDiskTests {
    /// Mounts a tmpfs of `megabytes` at `path`; nil (with the reason printed) when this machine cannot.
    private func mountTmpfs(at path: String, megabytes: Int) async throws -> Bool {
        guard getuid() == 0 else {
            print("skipping the small-disk test: mounting a tmpfs needs root")
            return false
        }
        let result = try await CLI.runTool("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path])
        guard result.status == 0 else {
            print("skipping the small-disk test: this machine does not allow mounting a tmpfs (\(result.stderr))")
            return false
        }
        return true
    }

    /// Writes a file until the disk is full.
    private func fillDisk(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let block = [UInt8](repeating: 7, count: 64 << 10)
        var size = block.count
        var rounds = 0
        while size > 0, rounds < 100_000 {
            rounds += 1
            let n = block.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, size) }
            if n <= 0 { size /= 2 }  // ENOSPC: try a smaller piece until not even one byte fits
        }
    }

    @Test func aFullDiskThenAReadOnlyDiskKeepTheCacheAndTheBytesRight() async throws {
        let scratch = ScratchDirectory()
        try FileManager.default.createDirectory(at: scratch.url, withIntermediateDirectories: true)
        defer { scratch.cleanup() }
        let mount = scratch.url.appendingPathComponent("disk").path
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        guard try await mountTmpfs(at: mount, megabytes: 72) else { return }
        defer { _ = try? CLI.runBlocking(["-l", mount], environment: [:], executable: URL(fileURLWithPath: "/bin/umount")) }
        let cache = mount + "/cache"
        let origin = try await MediaOriginServer()
        // 72 MB leaves room above the 50 MB the cache keeps free.
        let kept = content(3_000_000, seed: 1)
        let fresh = content(2_000_000, seed: 2)
        origin.set(OriginResource(bytes: kept), at: "/kept.mp4")
        origin.set(OriginResource(bytes: fresh), at: "/fresh.mp4")
        func fetch(_ name: String) async throws -> CLIResult {
            try await CLI.run(["fetch", origin.url(name).absoluteString, "--cache-dir", cache])
        }
        var result = try await fetch("kept.mp4")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == Data(kept))

        // Not one byte free.
        fillDisk(mount + "/filler")
        result = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.contains("kept.mp4"), "the full disk lost the index: \(result.text)")
        let names = try FileManager.default.contentsOfDirectory(atPath: cache)
        #expect(!names.contains { $0.contains("corrupt") }, "\(names)")
        // A new video still plays, straight from the origin; the cached one still comes from disk.
        result = try await fetch("fresh.mp4")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == Data(fresh))
        await origin.resetCounters()
        result = try await fetch("kept.mp4")
        #expect(result.stdout == Data(kept))
        #expect(origin.bodyBytesSent == 0, "cached bytes were downloaded again")

        // Read-only: cached bytes are served, new ones stream through, nothing is changed.
        unlink(mount + "/filler")
        let remount = try await CLI.runTool("/bin/mount", ["-o", "remount,ro", mount])
        #expect(remount.status == 0, "\(remount.stderr)")
        await origin.resetCounters()
        result = try await fetch("kept.mp4")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == Data(kept))
        #expect(origin.bodyBytesSent == 0)
        result = try await fetch("fresh.mp4")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == Data(fresh))
        result = try await CLI.run(["cache", "stats", "--json", "--cache-dir", cache])
        #expect(result.status == 0, "\(result.stderr)")
        await origin.shutdown()
    }

    /// A 40 MB disk with the default budgets (a 50 MB free-space floor, which such a disk can never have): the
    /// floor scales down to 5 % of the disk, so a 3 MB video is cached at its first fetch (one pass of the file)
    /// and the second costs the origin nothing; `cache stats` names the budget that binds.
    @Test func aSmallDiskWithDefaultBudgetsCachesAndSaysWhichBudgetBinds() async throws {
        let scratch = ScratchDirectory()
        try FileManager.default.createDirectory(at: scratch.url, withIntermediateDirectories: true)
        defer { scratch.cleanup() }
        let mount = scratch.url.appendingPathComponent("disk").path
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        guard try await mountTmpfs(at: mount, megabytes: 40) else { return }
        defer { _ = try? CLI.runBlocking(["-l", mount], environment: [:], executable: URL(fileURLWithPath: "/bin/umount")) }
        let cache = mount + "/cache"
        let origin = try await MediaOriginServer()
        let bytes = content(3_000_000, seed: 3)
        origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        for round in 1...2 {
            await origin.resetCounters()
            let result = try await CLI.run(["fetch", origin.url("v.mp4").absoluteString, "--cache-dir", cache])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == Data(bytes))
            let expected = round == 1 ? Int64(bytes.count) : 0
            #expect(origin.bodyBytesSent == expected, "fetch \(round): the origin sent \(origin.bodyBytesSent)")
        }
        let stats = try await CLI.run(["cache", "stats", "--json", "--cache-dir", cache])
        let figures = try #require(try JSONSerialization.jsonObject(with: stats.stdout) as? [String: Any])
        #expect(figures["completeBytes"] as? Int == bytes.count)
        #expect(figures["minimumFreeDiskBytes"] as? Int == 2_097_152, "\(figures)")
        #expect(figures["binding"] as? String == "disk")
        let text = try await CLI.run(["cache", "stats", "--cache-dir", cache])
        #expect(text.text.contains("binding          the disk's free-space floor"), "\(text.text)")
        // A floor the user chose is kept as given: 50 MB on this disk makes room by evicting what is cached.
        origin.set(OriginResource(bytes: content(1_000_000, seed: 4)), at: "/w.mp4")
        let chosen = try await CLI.run(
            ["fetch", origin.url("w.mp4").absoluteString, "--cache-dir", cache, "--min-free", "50MB"])
        #expect(chosen.status == 0, "\(chosen.stderr)")
        let listed = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache])
        #expect(!listed.text.contains("v.mp4"), "\(listed.text)")
        await origin.shutdown()
    }
}
