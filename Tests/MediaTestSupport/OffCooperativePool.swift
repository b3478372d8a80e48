import Foundation

/// Runs blocking `work` (a child process, a blocking socket read) on a thread of its own, off the cooperative pool:
/// the pool has one thread per core, and a test blocking one of them stalls every other test's tasks.
public func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
