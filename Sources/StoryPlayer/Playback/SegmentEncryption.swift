import Crypto
import Foundation
import MediaCache
import MediaFormats
import _CryptoExtras

/// How an HLS segment is encrypted: AES-128 in CBC mode over the whole segment, PKCS#7-padded
/// (`#EXT-X-KEY:METHOD=AES-128`). The key is a 16-byte resource fetched and cached like any other.
struct SegmentEncryption: Sendable, Equatable {
    /// Where the key is.
    let keyURL: URL
    /// The key's cache key.
    let keyCacheKey: CacheKey
    /// The initialization vector: the playlist's, or the segment's sequence number.
    let iv: [UInt8]
    /// The key's bytes, once fetched (a part whose length is known has them).
    var key: [UInt8]?

    /// The encryption `key` gives a segment whose media sequence number is `sequence`.
    init(_ key: HLSKey, sequence: Int, cacheKey: (URL) -> CacheKey) {
        keyURL = key.url
        keyCacheKey = cacheKey(key.url)
        iv = key.iv ?? (0..<16).map { index in index < 8 ? 0 : UInt8(truncatingIfNeeded: UInt64(sequence) >> (8 * (15 - index))) }
    }

    /// Fetches the key through the loader (16 bytes, cached).
    func fetchingKey(loader: MediaLoader) async throws -> SegmentEncryption {
        let bytes = try await loader.data(
            LoadingRequest(url: keyURL, cacheKey: keyCacheKey, requestedOffset: 0, requestedLength: 16))
        guard bytes.count == 16 else {
            throw PlayerError("the HLS key \(keyURL.lastPathComponent) is \(bytes.count) bytes, not the 16 of an AES-128 key")
        }
        var fetched = self
        fetched.key = bytes
        return fetched
    }

    /// Decrypts whole blocks (`ciphertext`, a multiple of 16 bytes) that follow `previous` (the block before them,
    /// or the IV for the segment's first). Throws when there is no key yet.
    func decrypt(_ ciphertext: some DataProtocol, after previous: [UInt8]) throws -> [UInt8] {
        guard let key else { throw PlayerError("the HLS key \(keyURL.lastPathComponent) was not fetched") }
        let plain = try AES._CBC.decrypt(
            ciphertext, using: SymmetricKey(data: key), iv: try AES._CBC.IV(ivBytes: previous), noPadding: true)
        return Array(plain)
    }

    /// The plaintext length of a segment of `length` encrypted bytes whose last two blocks (or one, for a
    /// one-block segment) are `tail`: the padding its last block ends in, checked (a wrong key shows here).
    func plaintextLength(encrypted length: Int64, tail: [UInt8], segment: URL) throws -> Int64 {
        guard length >= 16, length % 16 == 0, tail.count == Int(Swift.min(length, 32)) else {
            throw PlayerError(
                "HLS segment \(segment.lastPathComponent) is \(length) bytes, not whole AES blocks; is it encrypted?")
        }
        let previous = tail.count == 32 ? Array(tail[0..<16]) : iv
        let last = try decrypt(tail.suffix(16), after: previous)
        let padding = Int(last[15])
        guard (1...16).contains(padding), last.suffix(padding).allSatisfy({ Int($0) == padding }) else {
            throw PlayerError(
                "cannot decrypt HLS segment \(segment.lastPathComponent) with the key \(keyURL.lastPathComponent) "
                    + "(its padding is wrong: a wrong key or IV)")
        }
        return length - Int64(padding)
    }
}
