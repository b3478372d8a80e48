import Foundation

extension StorySources {
    /// `stories` with the caption files beside each local one that names none (each folder listed once).
    static func withSidecars(_ stories: [Story]) -> [Story] {
        var listings: [String: [String]] = [:]
        return stories.map { story in
            guard story.captions.isEmpty, case .local(_, let file) = story.source else { return story }
            let folder = file.deletingLastPathComponent().path
            let names = listings[folder] ?? ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            listings[folder] = names
            var story = story
            story.captions = CaptionLoading.sidecars(of: file, among: names)
            return story
        }
    }
}
