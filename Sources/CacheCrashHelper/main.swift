import Foundation
import MediaCache

// Writes a deterministic byte pattern into a cache in small chunks, committing often, and prints a line after each
// commit. The crash-safety tests SIGKILL it at an arbitrary point and then check what the index claims.
//
// usage: CacheCrashHelper CACHE_DIR LENGTH CHUNK
let arguments = CommandLine.arguments
guard arguments.count == 4, let length = Int64(arguments[2]), let chunk = Int(arguments[3]), chunk > 0 else {
    FileHandle.standardError.write(Data("usage: CacheCrashHelper CACHE_DIR LENGTH CHUNK\n".utf8))
    exit(2)
}

/// The byte expected at `offset`.
func patternByte(_ offset: Int64) -> UInt8 { UInt8(truncatingIfNeeded: offset &* 31 &+ (offset >> 9)) }

/// Writes one unbuffered line to stdout, so the parent sees it before any kill.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

var configuration = CacheConfiguration()
configuration.commitInterval = Int64(chunk) * 3
configuration.minimumFreeDiskBytes = 0
do {
    let store = try CacheStore(directory: URL(fileURLWithPath: arguments[1]), configuration: configuration)
    let key = CacheKey(url: URL(string: "http://127.0.0.1/crash.bin")!)
    guard case .cacheable(let generation, _) = try store.prepare(
        key: key, metadata: ResourceMetadata(url: "http://127.0.0.1/crash.bin", contentLength: length, etag: "\"v1\""))
    else { exit(3) }
    say("ready")
    // Write from both ends toward the middle so the file is sparse while it fills.
    var low: Int64 = 0
    var high = length
    var round = 0
    while low < high {
        let fromEnd = round % 2 == 1
        let size = min(Int64(chunk), high - low)
        let start = fromEnd ? high - size : low
        let bytes = (start..<(start + size)).map(patternByte)
        try store.write(key: key, generation: generation, offset: start, bytes: bytes)
        if fromEnd { high -= size } else { low += size }
        round += 1
        if round % 3 == 0 {
            try store.commit(key: key)
            say("committed \(store.availableRanges(for: key).total)")
        }
    }
    try store.close()
    say("done")
} catch {
    FileHandle.standardError.write(Data("CacheCrashHelper: \(error)\n".utf8))
    exit(1)
}
