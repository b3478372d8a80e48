import Foundation
import MediaCache
import NIOConcurrencyHelpers

/// What a reader's look at a resource's cached ranges costs while a download writes it: readers that look as
/// often as they can (a player at every wake, a status pane, the proxy's hit path) through the loader's view,
/// against the same readers looking under the store's lock (the store's `availableRanges(for:)`), while one writer
/// stores 64 KiB blocks and commits every sixteenth. Rounds alternate the modes; medians are compared.
///
///     swift run -c release stories-bench view [--rounds N] [--seconds S] [--readers N]
enum ViewReadBenchmark {
    static func main(_ arguments: [String]) async {
        var arguments = arguments
        var rounds = 5
        var seconds = 1.0
        var readers = 2
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            let value = arguments.first.flatMap(Double.init)
            switch argument {
            case "--rounds" where value.map { $0 >= 1 } == true: rounds = Int(value ?? 1)
            case "--seconds" where value.map { $0 > 0 } == true: seconds = value ?? 1
            case "--readers" where value.map { $0 >= 1 } == true: readers = Int(value ?? 1)
            default: PreloadBenchmark.fail("view: unknown or bad argument '\(argument)' (use --rounds N, --seconds S, --readers N)")
            }
            arguments.removeFirst()
        }
        do {
            try await run(rounds: rounds, seconds: seconds, readers: readers)
        } catch {
            PreloadBenchmark.fail("view failed: \(error)")
        }
    }

    struct Figures {
        var looksPerSecond: Double
        var writtenMBps: Double
    }

    static func run(rounds: Int, seconds: Double, readers: Int) async throws {
        print("cached-range looks beside a writer: \(readers) readers, 1 writer, \(seconds) s per run, \(rounds) rounds per mode")
        var results: [String: [Figures]] = ["view": [], "store lock": []]
        for _ in 0..<rounds {
            for mode in ["store lock", "view"] {
                results[mode]?.append(try measure(viewing: mode == "view", seconds: seconds, readers: readers))
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        print("mode          looks/s per reader   writer MB/s")
        for mode in ["store lock", "view"] {
            let figures = results[mode] ?? []
            let looks = median(figures.map(\.looksPerSecond))
            let written = median(figures.map(\.writtenMBps))
            print(mode.padding(toLength: 14, withPad: " ", startingAt: 0)
                + String(format: "%18.0f %13.1f", looks, written))
        }
        let view = median(results["view"]?.map(\.looksPerSecond) ?? [1])
        let locked = median(results["store lock"]?.map(\.looksPerSecond) ?? [1])
        print(String(format: "view / store lock: %.1fx the looks", view / Swift.max(locked, 1)))
    }

    private static func measure(viewing: Bool, seconds: Double, readers: Int) throws -> Figures {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = CacheConfiguration()
        configuration.minimumFreeDiskBytes = 0
        let length: Int64 = 1 << 30
        configuration.partialByteLimit = length * 2
        configuration.completeByteLimit = length * 2
        let store = try CacheStore(directory: directory, configuration: configuration)
        let loader = MediaLoader(store: store)
        let key = CacheKey(custom: "bench-view")
        let metadata = ResourceMetadata(url: "http://127.0.0.1/bench", contentLength: length, contentType: "video/mp4", etag: "\"b\"")
        guard case .cacheable(let generation, _) = try store.prepare(key: key, metadata: metadata) else {
            throw CacheError.io("the benchmark's resource was not cacheable")
        }
        let stop = NIOLockedValueBox(false)
        let looks = NIOLockedValueBox(0)
        // What the readers saw, kept so no look can be optimized away.
        let seen = NIOLockedValueBox(Int64(0))
        let block = [UInt8](repeating: 0x5A, count: 65_536)
        let group = DispatchGroup()
        var written: Int64 = 0
        for _ in 0..<readers {
            DispatchQueue.global().async(group: group) {
                var count = 0
                var total: Int64 = 0
                while !stop.withLockedValue({ $0 }) {
                    total &+= viewing ? loader.cachedRanges(key).total : store.availableRanges(for: key).total
                    count += 1
                }
                looks.withLockedValue { $0 += count }
                seen.withLockedValue { $0 &+= total }
            }
        }
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int(seconds * 1000))
        var blocks = 0
        while ContinuousClock.now < deadline, written + 65_536 <= length {
            _ = try store.write(key: key, generation: generation, offset: written, bytes: block)
            written += 65_536
            blocks += 1
            if blocks % 16 == 0 { try store.commit(key: key) }
        }
        let elapsed = ContinuousClock.now - started
        stop.withLockedValue { $0 = true }
        group.wait()
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        try store.close()
        return Figures(
            looksPerSecond: Double(looks.withLockedValue { $0 }) / wall / Double(readers),
            writtenMBps: Double(written) / wall / 1e6)
    }
}
