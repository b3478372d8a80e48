import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a cache directory keeps each thing: the data file of every generation of every resource, the folders
/// they move between, and the trash that removes files in the background.
///
/// A data file is named by key and generation, so a process that still holds an evicted version can never open
/// the file of a newer one; a partial file lives in `temp/`, a complete one in `media/`.
struct CacheLayout: Sendable {
    /// The cache directory (holds `index.sqlite`, `lock`, `temp/`, `media/`, `trash/`).
    let directory: URL
    /// The folders of data files being filled, complete and on their way out (worked out once: every open of a
    /// data file names one).
    let tempDirectory: String
    let mediaDirectory: String
    let trashDirectory: String
    private let trashQueue = DispatchQueue(label: "MediaCache.trash")

    /// The layout of the cache at `directory`.
    init(directory: URL) {
        self.directory = directory
        tempDirectory = directory.appendingPathComponent("temp").path
        mediaDirectory = directory.appendingPathComponent("media").path
        trashDirectory = directory.appendingPathComponent("trash").path
    }

    /// The path of `name` directly in the cache directory (`index.sqlite`, `lock`, the clean-close marker).
    func file(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The data file of a generation of `key` in `state`.
    func path(for key: CacheKey, generation: Int64, state: ResourceState) -> String {
        (state == .complete ? mediaDirectory : tempDirectory) + "/" + key.hex + "." + String(generation)
    }

    /// The data file holding the bytes `info` describes.
    func path(for info: ResourceInfo) -> String {
        path(for: info.key, generation: info.generation, state: info.state)
    }

    /// Where an older version of the cache kept `key`'s file (named by key alone), in either folder.
    func legacyPaths(for key: CacheKey) -> [String] {
        [tempDirectory, mediaDirectory].map { ($0 as NSString).appendingPathComponent(key.hex) }
    }

    /// True when a read-only store may serve `info` from its file (there, in the right folder, long enough for
    /// every recorded range).
    func fileMatches(_ info: ResourceInfo) -> Bool {
        guard let size = DataFile.size(atPath: path(for: info)) else { return false }
        return (info.ranges.ranges.last?.upperBound ?? 0) <= size && info.isComplete == (info.state == .complete)
    }

    /// Renames whatever is at `source` (a file, or a directory someone put there) into `trash/` and removes it in
    /// the background; a reader that still has the file open keeps reading the old bytes.
    func moveToTrash(_ source: String, name: String) throws {
        var info = stat()
        guard lstat(source, &info) == 0 else { return }
        let trashPath = (trashDirectory as NSString).appendingPathComponent("\(name).\(UUID().uuidString)")
        try DataFile.rename(from: source, to: trashPath)
        trashQueue.async { try? FileManager.default.removeItem(atPath: trashPath) }
    }

    /// Blocks until files moved to `trash/` so far have been unlinked.
    func waitForTrash() { trashQueue.sync {} }

    /// Removes everything in the folder at `path`; returns how many entries it held.
    static func emptyDirectory(_ path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for name in names { try? FileManager.default.removeItem(atPath: (path as NSString).appendingPathComponent(name)) }
        return names.count
    }
}
