#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library calls whose names types here also use (`close()`, `open`, `rename`), reachable from inside them on
/// Linux and Apple platforms alike.
enum SystemCalls {
    /// `open(2)` with a mode.
    static func openFile(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }

    /// `close(2)`.
    @discardableResult
    static func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }

    /// `rename(2)`.
    static func renameFile(_ source: String, _ destination: String) -> Int32 { rename(source, destination) }
}
