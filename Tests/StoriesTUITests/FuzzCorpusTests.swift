import Foundation
import Testing

/// Every committed fuzz input (and every failing input a fuzz run found, once added to `Fuzz/corpus`) is replayed
/// through its parser by the normally built `stories-fuzz`: no trap, no violated invariant.
@Suite struct FuzzCorpusTests {
    @Test func theCommittedCorpusReplaysCleanly() async throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let corpus = repository.appendingPathComponent("Fuzz/corpus").path
        let binary = try CLI.binary().deletingLastPathComponent().appendingPathComponent("stories-fuzz")
        let result = try await CLI.runTool(binary.path, [corpus])
        #expect(result.status == 0, "\(result.stderr)")
        let count = result.text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        #expect(count >= 20, "\(result.text)")
    }
}
