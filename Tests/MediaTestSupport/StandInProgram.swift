import Foundation
import Glibc

/// Shell scripts standing in for a program the product runs (yt-dlp), written for one test.
public enum StandInProgram {
    /// Writes `body` as an executable shell script named `name` in `directory`; returns its path.
    public static func write(_ name: String, _ body: String, in directory: TemporaryDirectory) throws -> String {
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let path = directory.url.appendingPathComponent(name).path
        // Written through a descriptor closed on exec: a process another test starts meanwhile must not keep it
        // open for writing (running a file open for writing fails: "text file busy").
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        let text = Array(("#!/bin/sh\n" + body + "\n").utf8)
        let written = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == text.count else { throw CocoaError(.fileWriteUnknown) }
        return path
    }
}
