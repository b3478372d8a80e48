import Foundation
import MediaCache
import MediaOrigin

/// What checking block checksums costs a reader of cached bytes: a resource is cached once, then read whole
/// through the loader by fresh stores (each checks every block once) with checking on and off, alternating, and
/// the median throughputs are compared.
///
///     swift run -c release stories-bench cached-read [--size MB] [--rounds N] [--chunk KB]
enum CachedReadBenchmark {
    static func main(_ arguments: [String]) async {
        var arguments = arguments
        var megabytes = 64
        var rounds = 7
        var chunk = LoaderConfiguration().readChunk
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            switch argument {
            case "--size":
                guard let value = arguments.first.flatMap(Int.init), value > 0 else {
                    PreloadBenchmark.fail("--size needs a number of megabytes above 0")
                }
                megabytes = value
                arguments.removeFirst()
            case "--rounds":
                guard let value = arguments.first.flatMap(Int.init), value > 0 else {
                    PreloadBenchmark.fail("--rounds needs a number above 0")
                }
                rounds = value
                arguments.removeFirst()
            case "--chunk":
                guard let value = arguments.first.flatMap(Int.init), value > 0 else {
                    PreloadBenchmark.fail("--chunk needs a number of KiB above 0")
                }
                chunk = value << 10
                arguments.removeFirst()
            default:
                PreloadBenchmark.fail("cached-read: unknown argument '\(argument)' (use --size MB, --rounds N, --chunk KB)")
            }
        }
        do {
            try await run(length: megabytes << 20, rounds: rounds, chunk: chunk)
        } catch {
            PreloadBenchmark.fail("cached-read failed: \(error)")
        }
    }

    static func run(length: Int, rounds: Int, chunk: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await MediaOriginServer()
        let period = (0..<65_521).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        origin.set(OriginResource(repeating: period, length: length, etag: "\"bench\""), at: "/bench.mp4")
        let url = origin.url("bench.mp4")
        var configuration = CacheConfiguration()
        configuration.minimumFreeDiskBytes = 0
        configuration.partialByteLimit = Int64(length) * 2
        configuration.completeByteLimit = Int64(length) * 2
        var loading = LoaderConfiguration()
        loading.revalidate = false
        loading.readChunk = chunk
        do {
            let store = try CacheStore(directory: directory, configuration: configuration)
            let loader = MediaLoader(store: store, configuration: loading)
            _ = try await read(loader, url)
            await loader.shutdown()
            try store.close()
        }
        print("cached read of \(length >> 20) MiB through the loader in \(chunk >> 10) KiB chunks, fresh store each time, \(rounds) rounds per mode")
        var rates: [Bool: [Double]] = [false: [], true: []]
        for _ in 0..<rounds {
            for verify in [false, true] {
                configuration.verifiesChecksums = verify
                let store = try CacheStore(directory: directory, configuration: configuration)
                let loader = MediaLoader(store: store, configuration: loading)
                let started = ContinuousClock.now
                let count = try await read(loader, url)
                let elapsed = ContinuousClock.now - started
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                rates[verify]?.append(Double(count) / seconds / 1e6)
                await loader.shutdown()
                try store.close()
            }
        }
        await origin.shutdown()
        let off = median(rates[false] ?? [])
        let on = median(rates[true] ?? [])
        print("checksums  median MB/s")
        print("off        " + String(format: "%.0f", off).leftPad(11))
        print("on         " + String(format: "%.0f", on).leftPad(11))
        print("ratio on/off: " + String(format: "%.3f", on / off) + " (each block checked once per process)")
    }

    private static func read(_ loader: MediaLoader, _ url: URL) async throws -> Int {
        var count = 0
        for try await chunk in loader.load(LoadingRequest(url: url)) { count += chunk.bytes.count }
        return count
    }

    private static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        return values.sorted()[values.count / 2]
    }
}
