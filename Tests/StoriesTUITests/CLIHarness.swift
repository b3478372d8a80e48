import Foundation
import MediaTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `stories-tui` binary and captures its output.
struct CLIResult {
    var status: Int32
    var stdout: Data
    var stderr: String

    var text: String { String(decoding: stdout, as: UTF8.self) }
}

enum CLI {
    /// The `stories-tui` binary next to the test bundle.
    static func binary() throws -> URL {
        let candidates = [Bundle.main.executableURL, URL(fileURLWithPath: CommandLine.arguments[0])]
            .compactMap { $0?.deletingLastPathComponent().appendingPathComponent("stories-tui") }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw CLIError("stories-tui binary not found next to the test bundle (\(candidates.map(\.path)))")
    }

    /// Runs the binary with `arguments` and waits for it to exit, off the cooperative thread pool (a blocked
    /// pool thread would starve in-process servers the child talks to).
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> CLIResult {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try runBlocking(arguments, environment: environment) })
            }
        }
    }

    /// Runs another program (e.g. curl) the same way.
    static func runTool(_ path: String, _ arguments: [String]) async throws -> CLIResult {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try runBlocking(arguments, environment: [:], executable: URL(fileURLWithPath: path))
                })
            }
        }
    }

    /// Starts the binary (or `executable`) with stdout and stderr on pipes and no stdin.
    static func start(_ arguments: [String], environment: [String: String], executable: URL? = nil) throws
        -> ChildProcess
    {
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        for (name, value) in environment { env[name] = value }
        return try ChildProcess(
            try (executable ?? binary()).path, arguments, environment: env, stdout: .pipe, stderr: .pipe)
    }

    /// Runs the binary and waits for it, reading both pipes while it runs.
    static func runBlocking(_ arguments: [String], environment: [String: String], executable: URL? = nil) throws
        -> CLIResult
    {
        let process = try start(arguments, environment: environment, executable: executable)
        let (outData, errData) = readBoth(process)
        process.waitUntilExit()
        return CLIResult(
            status: process.terminationStatus ?? -1, stdout: outData, stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Reads a child's stdout and stderr pipes to their ends at the same time (one alone could fill and stall it).
    static func readBoth(_ process: ChildProcess) -> (Data, Data) {
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = process.stderr?.readDataToEndOfFile() ?? Data()
            group.leave()
        }
        let outData = process.stdout?.readDataToEndOfFile() ?? Data()
        group.wait()
        return (outData, errData)
    }
}

struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A fresh directory under the system temp directory.
typealias ScratchDirectory = TemporaryDirectory


extension CLI {
    /// Runs the binary with stdout on a pipe whose reader takes `keep` bytes and then goes away, as
    /// `stories-tui … | head -c KEEP` does. Returns the exit status, stderr and the bytes read.
    static func runClosingStdout(_ arguments: [String], keep: Int) async throws -> CLIResult {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    let process = try start(arguments, environment: [:])
                    let group = DispatchGroup()
                    nonisolated(unsafe) var errData = Data()
                    group.enter()
                    DispatchQueue.global().async {
                        errData = process.stderr?.readDataToEndOfFile() ?? Data()
                        group.leave()
                    }
                    var kept = Data()
                    while kept.count < keep, let chunk = try process.stdout?.read(upToCount: keep - kept.count),
                        !chunk.isEmpty
                    {
                        kept.append(chunk)
                    }
                    try process.stdout?.close()
                    group.wait()
                    process.waitUntilExit()
                    return CLIResult(
                        status: process.terminationStatus ?? -1, stdout: kept,
                        stderr: String(decoding: errData, as: UTF8.self))
                })
            }
        }
    }
}

/// `stories-tui serve` as a child process.
enum ServeProcess {
    /// Starts `serve` with `arguments`; returns the process (stderr on its pipe) and its base URL.
    static func start(_ arguments: [String]) async throws -> (ChildProcess, String) {
        let process = try ChildProcess(try CLI.binary().path, ["serve"] + arguments, stdout: .pipe, stderr: .pipe)
        let firstLine = try await offCooperativePool { () -> String in
            var data = Data()
            while !data.contains(UInt8(ascii: "\n")), let chunk = process.stdout?.availableData, !chunk.isEmpty {
                data.append(chunk)
            }
            return String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        }
        #expect(firstLine.hasPrefix("proxy listening on http://127.0.0.1:"), "\(firstLine)")
        return (process, String(firstLine.dropFirst("proxy listening on ".count)))
    }

    /// Stops `serve` with SIGINT; one that does not exit within a minute is a failure (and is killed).
    static func stop(_ process: ChildProcess) async throws {
        process.send(SIGINT)
        try await waitForExit(process)
    }

    static func waitForExit(_ process: ChildProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning {
            Issue.record("serve did not stop within a minute of its signal")
            process.send(SIGKILL)
        }
        _ = try await offCooperativePool { process.waitUntilExit() }
    }
}
