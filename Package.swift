// swift-tools-version:6.1
import PackageDescription
#if canImport(Glibc)
import Glibc
#endif

let package = Package(
    name: "stories-tui",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "MediaCache", targets: ["MediaCache"]),
        .executable(name: "stories-tui", targets: ["stories-tui"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // CRC-32C with the CPU's CRC instructions: the checksums of cached blocks.
        .target(name: "CCRC32C"),
        // The SQLite connection settings Swift cannot call (variadic C): the index's write-ahead log kept between
        // processes. Links the system SQLite GRDB uses.
        .target(name: "CSQLiteOptions", linkerSettings: [.linkedLibrary("sqlite3")]),
        // HTTP's semantics the cache, the proxy and the origin share: dates, conditions, byte ranges, Content-Range and
        // freshness (RFC 9110, RFC 9111).
        .target(name: "HTTPSemantics"),
        .target(
            name: "MediaCache",
            dependencies: [
                "HTTPSemantics",
                "CCRC32C",
                "CSQLiteOptions",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // Media formats (MP4 boxes, HLS playlists): what a player, the proxy and preload planning read; the cache knows none.
        .target(name: "MediaFormats"),
        .target(
            name: "MediaOrigin",
            dependencies: [
                "HTTPSemantics",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // How much of what the proxy sent a client on this machine has read (Linux socket diagnostics).
        .target(name: "CSocketQueue"),
        .target(
            name: "MediaProxy",
            dependencies: [
                "MediaCache",
                "HTTPSemantics",
                "CSocketQueue",
                "MediaFormats",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // FFmpeg's demuxer, decoders, scaler, resampler and filters (HDR tone-mapping): the story's picture and sound.
        // (Debian: libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libavfilter-dev libswresample-dev.)
        // Loaded on first use, not linked.
        .target(
            name: "CFFmpeg",
            linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]
        ),
        // Pictures as cells or sixels through libchafa, loaded with dlopen (no development package).
        .target(name: "CChafa", linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
        // The sound device: PulseAudio's simple API, else ALSA, both loaded with dlopen (no development packages).
        .target(name: "CSoundOutput", linkerSettings: [.linkedLibrary("dl")]),
        .target(
            name: "StoryPlayer",
            dependencies: [
                "MediaCache", "MediaFormats", "CFFmpeg", "CSoundOutput", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // AES-128-CBC for encrypted HLS segments.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Stories from what people publish: feeds (RSS, Atom, JSON Feed), pages through yt-dlp, the list of
        // people followed; above the story model, below the command line.
        .target(name: "Following", dependencies: ["StoryPlayer", "MediaCache"]),
        .systemLibrary(
            name: "CNcurses",
            providers: [.apt(["libncurses-dev"])]
        ),
        .target(
            name: "Terminal",
            dependencies: ["CNcurses", "CChafa", .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]
        ),
        .target(
            name: "StoriesUI",
            dependencies: ["Terminal", "StoryPlayer"]
        ),
        .executableTarget(
            name: "stories-tui",
            dependencies: [
                "MediaCache",
                "MediaOrigin",
                "StoryPlayer",
                "Following",
                "MediaProxy",
                "StoriesUI",
                "Terminal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The toolchain exports every symbol of the program (some 39,000) to the dynamic symbol table, which
            // nothing looks up; the runtime's start-up looks through that table (0.7 ms of a 7 ms start).
            // A release program is linked by the toolchain's lld with its 130,000 relative relocations packed
            // (DT_RELR, glibc 2.36 and later): the loader no longer reads a 3 MB table at every start, and each
            // process keeps about 2.4 MB less of the program in memory. It also carries the Swift runtime and
            // Foundation inside (statically linked): a start no longer loads and binds their ten libraries (a
            // launch to `main` some 6 ms sooner, 7.5 against 14 ms for `--version`), and FFmpeg's libraries,
            // loaded meanwhile, are bound against a smaller set of objects.
            linkerSettings: [
                .unsafeFlags(staticRuntime, .when(platforms: [.linux], configuration: .release)),
                .unsafeFlags(["-Xlinker", "--no-export-dynamic"], .when(platforms: [.linux])),
                .unsafeFlags(packedRelocations, .when(platforms: [.linux], configuration: .release)),
            ]
        ),
        // `swift run -c release stories-bench`: next-story startup and stalls with and without preloading.
        .executableTarget(
            name: "stories-bench",
            dependencies: [
                "MediaCache", "MediaOrigin", "StoryPlayer", "Following", "StoriesUI", "Terminal",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The parsers of outside input under libFuzzer (`.ci/fuzz`); built normally it replays Fuzz/corpus.
        .executableTarget(
            name: "stories-fuzz",
            dependencies: ["HTTPSemantics", "MediaCache", "MediaProxy", "StoryPlayer", "MediaFormats", "Following"]
        ),
        // Writes to a cache until it is killed; the crash-safety tests SIGKILL it mid-write.
        .executableTarget(
            name: "CacheCrashHelper",
            dependencies: ["MediaCache"]
        ),
        // What the test suites share: a store + loader + origin harness, deterministic content, MP4 fixtures.
        .target(
            name: "MediaTestSupport",
            dependencies: [
                "HTTPSemantics", "MediaCache", "MediaOrigin", "MediaFormats",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/MediaTestSupport"
        ),
        .testTarget(
            name: "MediaFormatsTests",
            dependencies: ["MediaFormats", "MediaTestSupport"]
        ),
        .testTarget(
            name: "MediaCacheTests",
            dependencies: [
                "HTTPSemantics", "MediaCache", "MediaOrigin", "MediaTestSupport", "CacheCrashHelper", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "FollowingTests",
            dependencies: ["Following", "StoryPlayer", "MediaCache", "MediaOrigin", "MediaTestSupport"]
        ),
        .testTarget(
            name: "StoryPlayerTests",
            dependencies: [
                "StoryPlayer", "MediaCache", "MediaFormats", "MediaOrigin", "MediaTestSupport", "CFFmpeg",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "MediaProxyTests",
            dependencies: [
                "MediaProxy", "HTTPSemantics", "MediaCache", "MediaOrigin", "MediaTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "StoriesUITests",
            dependencies: ["StoriesUI", "Terminal", "StoryPlayer", "MediaCache"]
        ),
        .testTarget(
            name: "StoriesTUITests",
            dependencies: [
                "stories-tui", "stories-fuzz", "MediaOrigin", "MediaCache", "MediaTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "MediaOriginTests",
            dependencies: [
                "MediaOrigin", "HTTPSemantics", "MediaTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

/// Linker flags that carry the Swift runtime and Foundation inside the program. Modules compiled for the shared
/// runtime name only the libraries they import, so Foundation's own static parts are named here.
var staticRuntime: [String] {
    [
        "-static-stdlib", "-lCoreFoundation", "-l_CFXMLInterface", "-l_FoundationCShims", "-l_FoundationCollections",
        "-l_FoundationICU", "-lxml2",
    ]
}

/// Linker flags that pack relative relocations, where the C library that loads the program understands them
/// (glibc 2.36 and later; none elsewhere).
var packedRelocations: [String] {
    #if canImport(Glibc)
    var text = [CChar](repeating: 0, count: 64)
    guard confstr(Int32(_CS_GNU_LIBC_VERSION), &text, text.count) > 0 else { return [] }
    let version = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let numbers = version.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
    guard numbers.count >= 2, (numbers[0], numbers[1]) >= (2, 36) else { return [] }
    return ["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"]
    #else
    return []
    #endif
}
