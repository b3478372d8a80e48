import Foundation

/// An AES-128 encrypted HLS segment's plaintext for the demuxer: each read fetches the cipher blocks it covers
/// (and the one before, CBC's chaining value) through the segment's `LoaderByteSource` and decrypts them, so the
/// cache holds the segment as the origin sent it and the decoder reads it at any offset.
// Sendable: its members are constants; reads come from the decoder's one thread.
final class DecryptingByteSource: DemuxerByteSource, @unchecked Sendable {
    private let encrypted: LoaderByteSource
    private let encryption: SegmentEncryption
    /// Plaintext bytes (the encrypted length less the padding).
    let length: Int64

    /// The plaintext of `encrypted` (read through the loader), `length` bytes once decrypted with `encryption`.
    init(encrypted: LoaderByteSource, encryption: SegmentEncryption, length: Int64) {
        self.encrypted = encrypted
        self.encryption = encryption
        self.length = length
    }

    var durationIsKnown: Bool { false }
    var bytesRead: Int64 { encrypted.bytesRead }
    func cancel() { encrypted.cancel() }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset < length, buffer.count > 0 else { return 0 }
        let count = Int(Swift.min(Int64(buffer.count), length - offset, Self.maxRead))
        let firstBlock = offset / 16 * 16
        let end = Swift.min(encrypted.length, (offset + Int64(count) + 15) / 16 * 16)
        let cipherStart = Swift.max(0, firstBlock - 16)
        var cipher = [UInt8](repeating: 0, count: Int(end - cipherStart))
        var filled = 0
        while filled < cipher.count {
            let got = try cipher.withUnsafeMutableBytes { bytes in
                try encrypted.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled...]), at: cipherStart + Int64(filled))
            }
            guard got > 0 else { throw PlayerError("the encrypted HLS segment ended early, at byte \(cipherStart + Int64(filled))") }
            filled += got
        }
        let previous = firstBlock == 0 ? encryption.iv : Array(cipher[0..<16])
        let plain = try encryption.decrypt(cipher[Int(firstBlock - cipherStart)...], after: previous)
        let from = Int(offset - firstBlock)
        plain.withUnsafeBytes { source in
            buffer.baseAddress?.copyMemory(from: source.baseAddress! + from, byteCount: count)
        }
        return count
    }

    /// The most plaintext one read decrypts.
    static let maxRead: Int64 = 64 * 1024
}
