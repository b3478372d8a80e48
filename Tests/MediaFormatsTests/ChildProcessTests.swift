import Foundation
import MediaTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tests' way of running other programs (Foundation's `Process.run()` crashes now and then on Linux).
@Suite struct ChildProcessTests {
    @Test func aChildSeesOnlyItsThreeStandardDescriptorsAndItsOutputArrives() throws {
        // A descriptor this process holds open without close-on-exec must not reach the child.
        let held = open("/dev/null", O_RDONLY)
        defer { close(held) }
        #expect(held > 2)
        let child = try ChildProcess("/bin/sh", ["-c", "ls /proc/$$/fd; echo oops >&2; exit 3"], stdout: .pipe, stderr: .pipe)
        let out = String(decoding: child.stdout?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        let err = String(decoding: child.stderr?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        #expect(child.waitUntilExit() == .exited(3))
        #expect(child.terminationStatus == 3)
        #expect(!child.isRunning)
        #expect(out.split(separator: "\n").sorted() == ["0", "1", "2"], "\(out)")
        #expect(err == "oops\n")
    }

    @Test func aSignalledChildSaysWhichSignalAndAFileTakesItsOutput() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let path = directory.url.appendingPathComponent("out.txt").path
        let child = try ChildProcess("/bin/sh", ["-c", "echo started; exec sleep 600"], stdout: .file(path))
        // Killed once it wrote its line (polled with a deadline), still running.
        let deadline = ContinuousClock.now + .seconds(60)
        while (FileManager.default.contents(atPath: path)?.count ?? 0) < 8, ContinuousClock.now < deadline {
            usleep(1_000)
        }
        #expect(child.isRunning)
        child.send(SIGKILL)
        #expect(child.waitUntilExit() == .signalled(SIGKILL))
        #expect(child.terminationStatus == 128 + SIGKILL)
        #expect(FileManager.default.contents(atPath: path) == Data("started\n".utf8))
    }

    @Test func aMissingProgramIsAnErrorNotACrash() {
        #expect(throws: ChildProcessError.self) { try ChildProcess("/nonexistent/program", []) }
    }
}
