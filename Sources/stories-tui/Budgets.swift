import ArgumentParser
import Foundation
import MediaCache

/// The cache budgets of every command that writes: `--max-size`, `--max-age`, `--max-entries`, `--min-free`.
struct BudgetOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Most bytes the cache keeps, e.g. 500MB or 2GB (a third for partly cached videos, the rest for whole ones).",
        valueName: "SIZE"))
    var maxSize: String?
    @Option(help: ArgumentHelp(
        "Evict videos not played for this long, e.g. 12h, 2d or 1w (partly and completely cached alike).",
        valueName: "AGE"))
    var maxAge: String?
    @Option(help: ArgumentHelp("Most videos the cache keeps.", valueName: "N")) var maxEntries: String?
    @Option(help: ArgumentHelp("Evict until the disk has this much free, e.g. 1GB (0 turns it off).", valueName: "SIZE"))
    var minFree: String?

    /// The values given on the command line, by setting name.
    var given: [Budgets.Setting: String] {
        var values: [Budgets.Setting: String] = [:]
        values[.maxSize] = maxSize
        values[.maxAge] = maxAge
        values[.maxEntries] = maxEntries
        values[.minFree] = minFree
        return values
    }
}

/// Budgets from, in order of precedence: command-line flags, environment variables (`STORIES_MAX_SIZE`, …), the
/// config file (`$XDG_CONFIG_HOME/stories-tui/config.json`, else `~/.config/stories-tui/config.json`), the defaults.
enum Budgets {
    /// One budget setting, with its names in each layer.
    enum Setting: String, CaseIterable, Sendable {
        case maxSize, maxAge, maxEntries, minFree

        var flag: String {
            switch self {
            case .maxSize: return "--max-size"
            case .maxAge: return "--max-age"
            case .maxEntries: return "--max-entries"
            case .minFree: return "--min-free"
            }
        }

        var environmentName: String {
            switch self {
            case .maxSize: return "STORIES_MAX_SIZE"
            case .maxAge: return "STORIES_MAX_AGE"
            case .maxEntries: return "STORIES_MAX_ENTRIES"
            case .minFree: return "STORIES_MIN_FREE"
            }
        }
    }

    /// The budgets in force and where each came from ("--max-size", "STORIES_MAX_AGE", the file's path, or
    /// "default").
    struct Resolved: Equatable {
        var configuration = CacheConfiguration()
        var sources: [Setting: String] = [:]
    }

    /// The config file's path.
    static func configFile(environment: [String: String]) -> String {
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty { return xdg + "/stories-tui/config.json" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.config/stories-tui/config.json"
    }

    /// Resolves the layers; a value that cannot be read is an error naming where it came from.
    static func resolve(
        flags: [Setting: String] = [:], environment: [String: String] = CLIEnvironment.variables
    ) throws(CLIFailure) -> Resolved {
        let path = configFile(environment: environment)
        var file: [String: Any] = [:]
        if let data = FileManager.default.contents(atPath: path) {
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw CLIFailure(message: "\(path): is not a JSON object (see README: Budgets)", exitCode: 2)
            }
            let known = Set(Setting.allCases.map(\.rawValue)).union(FollowSettings.keys).union(CaptionSettings.keys)
            if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
                throw CLIFailure(
                    message: "\(path): unknown setting '\(unknown)' (use \(known.sorted().joined(separator: ", ")))",
                    exitCode: 2)
            }
            file = object
        }
        var resolved = Resolved()
        for setting in Setting.allCases {
            let text: String
            let source: String
            if let flag = flags[setting] {
                (text, source) = (flag, setting.flag)
            } else if let value = environment[setting.environmentName], !value.isEmpty {
                (text, source) = (value, setting.environmentName)
            } else if let value = file[setting.rawValue] {
                (text, source) = ((value as? NSNumber).map { "\($0)" } ?? (value as? String ?? "\(value)"), "\(path): \(setting.rawValue)")
            } else {
                resolved.sources[setting] = "default"
                continue
            }
            try apply(setting, text, source: source, to: &resolved.configuration)
            resolved.sources[setting] = source
        }
        return resolved
    }

    private static func apply(_ setting: Setting, _ text: String, source: String, to configuration: inout CacheConfiguration)
        throws(CLIFailure)
    {
        switch setting {
        case .maxSize:
            guard let bytes = parseSize(text), bytes >= 1_000_000 else {
                throw CLIFailure(message: "\(source): '\(text)' is not a size of at least 1MB (use e.g. 500MB or 2GB)", exitCode: 2)
            }
            configuration.partialByteLimit = bytes / 3
            configuration.completeByteLimit = bytes - bytes / 3
        case .maxAge:
            guard let seconds = parseDuration(text), seconds >= 60 else {
                throw CLIFailure(message: "\(source): '\(text)' is not an age of at least a minute (use e.g. 12h, 2d or 1w)", exitCode: 2)
            }
            configuration.partialMaxAge = seconds
            configuration.completeMaxAge = seconds
        case .maxEntries:
            guard let count = Int(text.trimmingCharacters(in: .whitespaces)), count >= 1 else {
                throw CLIFailure(message: "\(source): '\(text)' is not a number of videos of at least 1", exitCode: 2)
            }
            configuration.maxEntries = count
        case .minFree:
            guard let bytes = parseSize(text) else {
                throw CLIFailure(message: "\(source): '\(text)' is not a size (use e.g. 1GB, or 0 to turn it off)", exitCode: 2)
            }
            configuration.minimumFreeDiskBytes = bytes
            configuration.minimumFreeDiskShare = nil  // a floor the user chose is kept as it is
        }
    }

    /// `500MB`, `2GB`, `1.5G`, `100kB`, `64MiB`, `123456` (bytes); decimal units unless `i` says binary.
    static func parseSize(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let number = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces).lowercased()
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        let factors: [String: Double] = [
            "": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
            "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824, "tib": 1_099_511_627_776,
        ]
        guard let factor = factors[unit] else { return nil }
        let bytes = value * factor
        guard bytes < 9e18 else { return nil }
        return Int64(bytes.rounded())
    }

    /// `90s`, `30m`, `12h`, `2d`, `1w`, or plain seconds.
    static func parseDuration(_ text: String) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let number = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces).lowercased()
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        let factors: [String: Double] = ["": 1, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86_400, "w": 604_800]
        guard let factor = factors[unit] else { return nil }
        return value * factor
    }
}

/// Ages for people: `172800` → `2d`, `5400` → `1.5h`.
enum AgeFormat {
    static func string(_ seconds: TimeInterval) -> String {
        for (unit, size) in [("w", 604_800.0), ("d", 86_400.0), ("h", 3600.0), ("m", 60.0)] where seconds >= size {
            let value = seconds / size
            return value == value.rounded() ? "\(Int(value))\(unit)" : String(format: "%.1f", value) + unit
        }
        return "\(Int(seconds))s"
    }
}
