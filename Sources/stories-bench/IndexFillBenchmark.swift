import Foundation
import MediaCache

/// Fills a cache directory with many small, completely cached entries (for measuring what opening, `cache stats`
/// and a cached `fetch` cost as the index grows): entry `i` is `http://127.0.0.1:9/fill/i` (nothing listens on port
/// 9, so a `fetch` of it is answered from the cache as an offline origin's would be), `--size` bytes.
///
///     stories-bench fill DIR --entries N [--size BYTES]
enum IndexFillBenchmark {
    static func main(_ arguments: [String]) async {
        var arguments = arguments
        var entries = 1_000
        var size = 1_024
        var directory: String?
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            switch argument {
            case "--entries", "--size":
                guard let value = arguments.first.flatMap(Int.init), value > 0 else {
                    PreloadBenchmark.fail("\(argument) needs a number above 0")
                }
                if argument == "--entries" { entries = value } else { size = value }
                arguments.removeFirst()
            default:
                guard directory == nil, !argument.hasPrefix("-") else {
                    PreloadBenchmark.fail("fill: unknown argument '\(argument)' (use DIR --entries N --size BYTES)")
                }
                directory = argument
            }
        }
        guard let directory else { PreloadBenchmark.fail("fill: name the cache directory to fill") }
        do {
            var configuration = CacheConfiguration()
            configuration.minimumFreeDiskBytes = 0
            configuration.completeByteLimit = Int64(entries + 1) * Int64(size)
            let store = try CacheStore(directory: URL(fileURLWithPath: directory), configuration: configuration)
            let bytes = [UInt8](repeating: 0x5A, count: size)
            let start = ContinuousClock.now
            for index in 0..<entries {
                let url = "http://127.0.0.1:9/fill/\(index)"
                guard let parsed = URL(string: url) else { PreloadBenchmark.fail("fill: bad URL \(url)") }
                let key = CacheKey(url: parsed)
                let metadata = ResourceMetadata(url: url, contentLength: Int64(size), etag: "\"\(index)\"")
                guard case .cacheable(let generation, _) = try store.prepare(key: key, metadata: metadata) else {
                    PreloadBenchmark.fail("fill: entry \(index) was refused")
                }
                try store.write(key: key, generation: generation, offset: 0, bytes: bytes)
                if index > 0, index % 10_000 == 0 {
                    FileHandle.standardError.write(Data("fill: \(index) of \(entries)\n".utf8))
                }
            }
            try store.close()
            print("filled \(directory) with \(entries) entries of \(size) bytes in \(start.duration(to: .now))")
        } catch {
            PreloadBenchmark.fail("fill failed: \(error)")
        }
    }
}
