import Foundation
import StoriesUI
import StoryPlayer

/// The caption settings of the config file (`captions`, `captionLang`), with the command line's over them; `v`
/// on the screen writes its choice back, so it holds at the next run.
struct CaptionSettings {
    /// The config file's keys read here.
    static let keys: Set<String> = ["captions", "captionLang"]

    /// When captions show.
    var mode = CaptionMode.auto
    /// Languages in order of preference.
    var languages: [String] = []

    /// Reads the config file, then `--captions` and `--caption-lang`.
    static func read(
        mode flag: String?, languages languageFlag: String?, environment: [String: String] = CLIEnvironment.variables
    ) throws(CLIFailure) -> CaptionSettings {
        let path = Budgets.configFile(environment: environment)
        var settings = CaptionSettings()
        let object = (FileManager.default.contents(atPath: path)).flatMap {
            try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
        } ?? [:]
        if let value = object["captions"] {
            guard let text = value as? String, let mode = CaptionMode(rawValue: text.lowercased()) else {
                throw CLIFailure(message: "\(path): captions: must be \"on\", \"off\" or \"auto\"", exitCode: 2)
            }
            settings.mode = mode
        }
        if let flag {
            guard let mode = CaptionMode(rawValue: flag.lowercased()) else {
                throw CLIFailure(message: "--captions: unknown mode '\(flag)' (use on, off or auto)", exitCode: 2)
            }
            settings.mode = mode
        }
        if let value = object["captionLang"] {
            let list = (value as? [String]) ?? (value as? String).map { [$0] }
            guard let list, let languages = parse(list.joined(separator: ",")) else {
                throw CLIFailure(message: "\(path): captionLang: must be language tags such as \"en\" or [\"en\", \"de\"]", exitCode: 2)
            }
            settings.languages = languages
        }
        if let languageFlag {
            guard let languages = parse(languageFlag) else {
                throw CLIFailure(message: "--caption-lang: '\(languageFlag)' is not a list of language tags (e.g. en,de or pt-BR)", exitCode: 2)
            }
            settings.languages = languages
        }
        return settings
    }

    /// `en,de` as tags; nil when one is not a language tag.
    static func parse(_ text: String) -> [String]? {
        let tags = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !tags.isEmpty, tags.allSatisfy(CaptionLoading.isLanguageTag) else { return nil }
        return tags
    }

    /// Writes `mode` into the config file, keeping every other setting; false when it could not be written (the
    /// choice then holds for this run only).
    @discardableResult
    static func remember(_ mode: CaptionMode, environment: [String: String] = CLIEnvironment.variables) -> Bool {
        let path = Budgets.configFile(environment: environment)
        var object: [String: Any] = [:]
        if let data = FileManager.default.contents(atPath: path) {
            // A file that is not a JSON object is the person's to fix: never overwritten.
            guard let read = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return false }
            object = read
        }
        object["captions"] = mode.rawValue
        guard let data = try? JSONSerialization.data(
            withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return false }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (try? (data + Data("\n".utf8)).write(to: URL(fileURLWithPath: path), options: .atomic)) != nil
    }
}
