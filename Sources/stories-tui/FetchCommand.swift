import ArgumentParser
import Foundation
import MediaCache

/// `stories-tui fetch URL [--range A-B] [--output FILE]`: reads through the player's loader.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Read a URL (or a byte range of it) through the cache, writing exactly those bytes.",
        discussion: "Cached bytes come from disk; missing ones are downloaded once and kept for next time.")

    @Argument(help: "The http or https URL.") var url: String
    @Option(help: ArgumentHelp(
            "Inclusive byte range, as in HTTP: 100-199, 100-, or --range=-500 for the last 500 bytes.",
            valueName: "START-END"))
    var range: String?
    @Option(
        name: .shortAndLong,
        help: ArgumentHelp(
            "Write to FILE instead of stdout ('-': stdout even when it is a terminal).", valueName: "FILE"))
    var output: String?
    @Option(help: ArgumentHelp("Append a JSON line per cache event to FILE.", valueName: "FILE"))
    var eventLog: String?
    @OptionGroup var cache: CacheDirOption
    @OptionGroup(title: "Cache budgets") var budgets: BudgetOptions

    func run() async throws {
        try await reportingFailures {
            // Video bytes on a terminal garble it: refuse unless asked for, as curl does.
            if output == nil, isatty(STDOUT_FILENO) == 1 {
                throw CLIFailure(
                    message: "fetch: not writing binary data to the terminal (redirect it, or use --output FILE, "
                        + "or --output - to write it here anyway)", exitCode: 2)
            }
            let origin = try CLIURL.parse(url, context: "fetch")
            let key = CacheKey(url: origin, rule: try FollowSettings.read().keyRule)
            let byteRange = try range.map { try ByteRangeArgument.parse($0) }
            let store = try cache.openStore(budgets: budgets)
            let log = try eventLog.map { path in
                do { return try EventLog(path: path) } catch {
                    throw CLIFailure(message: "--event-log: \(error)", exitCode: 2)
                }
            }
            // A whole file is read in large chunks: each is read and checked in two halves at once.
            var configuration = LoaderDefaults.configuration
            configuration.readChunk = 1 << 20
            let loader = MediaLoader(store: store, configuration: configuration, eventLog: log, logger: CLILogging.logger())
            var failure: Error?
            do {
                try await write(loader: loader, origin: origin, key: key, range: byteRange)
            } catch {
                failure = error
            }
            await loader.shutdown()
            try? store.close()
            // The reader of stdout went away (`| head -c 100`): what it wanted it got; end quietly.
            if failure is StandardStreams.Closed { return }
            if let failure {
                if failure is CLIFailure { throw failure }
                throw CLIFailure(message: "fetch: \(failure)", exitCode: 1)
            }
        }
    }

    /// How often one fetch into a file starts over because the resource changed at the origin mid-transfer.
    static let maxStartsOver = 2

    private func write(loader: MediaLoader, origin: URL, key: CacheKey, range: ByteRangeArgument?) async throws {
        let sink = try FetchOutput(path: output)
        var startsOver = 0
        while true {
            do {
                // A one-shot download wants the current version from its first byte: check a cached copy first.
                await loader.validate(url: origin, key: key)
                for try await chunk in loader.load(try await request(loader: loader, origin: origin, key: key, range: range)) {
                    try sink.write(chunk.bytes)
                }
                try sink.commit()
                return
            } catch where Self.isVersionChange(error) && sink.canStartOver && startsOver < Self.maxStartsOver {
                // Nothing irrevocable left yet: the file is written again from the new version's first byte.
                startsOver += 1
                StandardStreams.writeError(
                    "fetch: \(OriginURL.redactingCredentials(in: origin.absoluteString)) changed at the origin "
                        + "during the transfer; starting over on the new version\n")
                try sink.startOver()
            } catch {
                sink.abandon()
                throw error
            }
        }
    }

    /// The loader request for `range` (a suffix needs the current length).
    private func request(loader: MediaLoader, origin: URL, key: CacheKey, range: ByteRangeArgument?) async throws -> LoadingRequest {
        var request = LoadingRequest(url: origin, cacheKey: key)
        guard let range else { return request }
        switch range {
        case .closed(let first, let last):
            request.requestedOffset = first
            request.requestedLength = last - first + 1
        case .from(let first):
            request.requestedOffset = first
        case .suffix(let count):
            let info = try await loader.contentInformation(for: origin, key: key)
            guard let length = info.contentLength else {
                throw CLIFailure(message: "fetch: --range -\(count) needs a known length; the origin sent none", exitCode: 1)
            }
            request.requestedOffset = Swift.max(0, length - count)
        }
        return request
    }

    /// True for the error a reader meets when the origin's version changed under it.
    static func isVersionChange(_ error: Error) -> Bool {
        if case OriginError.resourceChanged = error { return true }
        if case CacheError.resourceChanged = error { return true }
        return false
    }
}

/// A `--range` value: `A-B`, `A-` or `-N`, inclusive like HTTP.
enum ByteRangeArgument: Equatable {
    case closed(Int64, Int64)
    case from(Int64)
    case suffix(Int64)

    static func parse(_ text: String) throws -> ByteRangeArgument {
        let bad = CLIFailure(
            message: "--range: '\(text)' is not a byte range (use START-END, START- or -COUNT, e.g. 0-1023)",
            exitCode: 2)
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw bad }
        func number(_ part: Substring) -> Int64? {
            guard !part.isEmpty, part.count <= 18, part.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int64(part)
        }
        switch (number(parts[0]), number(parts[1]), parts[0].isEmpty, parts[1].isEmpty) {
        case (let first?, let last?, _, _):
            guard last >= first else {
                throw CLIFailure(message: "--range: '\(text)' ends before it starts", exitCode: 2)
            }
            return .closed(first, last)
        case (let first?, nil, _, true): return .from(first)
        case (nil, let count?, true, _):
            guard count > 0 else { throw CLIFailure(message: "--range: '\(text)' asks for no bytes", exitCode: 2) }
            return .suffix(count)
        default: throw bad
        }
    }
}

/// URL arguments: http and https only.
enum CLIURL {
    static func parse(_ text: String, context: String) throws -> URL {
        do {
            return try OriginURL.parse(text)
        } catch {
            throw CLIFailure(message: "\(context): \(error)", exitCode: 2)
        }
    }
}
