import Foundation
import StoryPlayer

/// Turns a web page into media URLs with yt-dlp (`yt-dlp -J`), as mpv's ytdl hook does: a video is one story, a
/// playlist's entries are stories of its uploader.
public struct PageResolver: Sendable {
    /// One media file a page resolved to.
    public struct Entry: Sendable, Equatable {
        /// The media URL (often signed: it changes on every resolve).
        public var url: URL
        /// The extractor's id of the video.
        public var id: String?
        /// Its title.
        public var title: String?
        /// Who posted it.
        public var uploader: String?
        /// When it was posted.
        public var published: Date?
        /// The format chosen (part of the cache key: the same page in another format is other bytes).
        public var formatID: String?
        /// Headers the media requests must carry (`User-Agent`, `Referer`, cookies).
        public var headers: [String: String]
        /// The video's own page (a playlist's entries each have one), to resolve it again.
        public var page: URL?
        /// Its subtitles in WebVTT or SubRip: the uploader's in every language, and the automatic ones in the
        /// video's own language (not their machine translations), eight at most.
        public var captions: [(url: URL, language: String)] = []

        public static func == (a: Entry, b: Entry) -> Bool {
            a.url == b.url && a.id == b.id && a.title == b.title && a.uploader == b.uploader && a.published == b.published
                && a.formatID == b.formatID && a.headers == b.headers && a.page == b.page
                && a.captions.map(\.url) == b.captions.map(\.url) && a.captions.map(\.language) == b.captions.map(\.language)
        }

        /// The captions as a story's caption sources.
        public var captionSources: [CaptionSource] {
            captions.map { CaptionSource(location: .remote($0.url), language: $0.language) }
        }
    }

    /// What a page gave.
    public struct Page: Sendable, Equatable {
        /// The playlist's title or uploader, for a page of several videos.
        public var uploader: String?
        /// Its videos in order.
        public var entries: [Entry]
    }

    /// The best single file with picture and sound no taller than 720 lines (a terminal's picture box needs no
    /// more), else the best single file.
    public static let defaultFormat = "best[vcodec!=none][acodec!=none][height<=?720]/best[height<=?720]/best"
    /// How long yt-dlp is given for one page.
    public static let timeout: TimeInterval = 30
    /// The most of yt-dlp's output read.
    static let outputLimit = 32 << 20

    /// The yt-dlp program: a path, or a name looked up on PATH.
    public var program: String
    /// yt-dlp's `-f` format selector.
    public var format: String
    /// Seconds allowed per page.
    public var timeout: TimeInterval

    /// A resolver running `program` (default `yt-dlp` on PATH).
    public init(program: String? = nil, format: String? = nil, timeout: TimeInterval = PageResolver.timeout) {
        self.program = program ?? "yt-dlp"
        self.format = format ?? Self.defaultFormat
        self.timeout = timeout
    }

    /// The executable `program` names, nil when it is not there.
    public func executable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        for folder in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let path = String(folder) + "/" + program
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Resolves `page`; throws one sentence when it cannot.
    public func resolve(_ page: URL) async throws(FeedError) -> Page {
        guard let executable = executable() else {
            throw FeedError("opening web pages needs yt-dlp: install it with `pip install yt-dlp` (or set ytdlPath in the config)")
        }
        let run = await ChildRun.run(
            executable, ["-J", "--no-warnings", "--no-progress", "--no-color", "-f", format, "--", page.absoluteString],
            timeout: timeout, outputLimit: Self.outputLimit)
        if run.timedOut { throw FeedError("yt-dlp did not answer within \(Int(timeout)) s") }
        guard run.status == 0 else {
            let last = run.errorText.split(whereSeparator: \.isNewline).last.map(String.init) ?? "exit status \(run.status)"
            let reason = last.hasPrefix("ERROR: ") ? String(last.dropFirst(7)) : last
            throw FeedError("yt-dlp could not read the page: \(String(reason.prefix(200)))")
        }
        return try Self.page(fromJSON: run.output)
    }

    /// Reads yt-dlp's `-J` output.
    public static func page(fromJSON data: Data) throws(FeedError) -> Page {
        guard let object = try? JSONSerialization.jsonObject(with: data), let root = object as? [String: Any] else {
            throw FeedError("yt-dlp printed something other than its JSON")
        }
        if root["_type"] as? String == "playlist" {
            let entries = (root["entries"] as? [Any] ?? []).compactMap { ($0 as? [String: Any]).flatMap(entry) }
            guard !entries.isEmpty else { throw FeedError("the page lists no video yt-dlp can play") }
            return Page(uploader: (root["uploader"] as? String) ?? (root["title"] as? String), entries: entries)
        }
        guard let single = entry(root) else { throw FeedError("yt-dlp found no playable file on the page") }
        return Page(uploader: single.uploader, entries: [single])
    }

    private static func entry(_ info: [String: Any]) -> Entry? {
        var format = info
        if info["url"] == nil, let requested = info["requested_formats"] as? [[String: Any]], let first = requested.first {
            format = first
        }
        guard let text = format["url"] as? String, let url = URL(string: text),
            ["http", "https"].contains(url.scheme?.lowercased() ?? "")
        else { return nil }
        var headers: [String: String] = [:]
        for (name, value) in format["http_headers"] as? [String: Any] ?? [:] {
            if let value = value as? String { headers[name] = value }
        }
        let timestamp = (info["timestamp"] as? Double) ?? (info["timestamp"] as? Int).map(Double.init)
        var entry = Entry(
            url: url, id: info["id"] as? String, title: info["title"] as? String,
            uploader: (info["uploader"] as? String) ?? (info["channel"] as? String),
            published: timestamp.map { Date(timeIntervalSince1970: $0) },
            formatID: (format["format_id"] as? String) ?? (info["format_id"] as? String), headers: headers,
            page: (info["webpage_url"] as? String).flatMap(URL.init(string:)).flatMap { page in
                ["http", "https"].contains(page.scheme?.lowercased() ?? "") ? page : nil
            })
        entry.captions = captions(info)
        return entry
    }

    /// The subtitles yt-dlp lists: `subtitles` (the uploader's) first, then `automatic_captions` in the video's
    /// own language (`en-orig`, or the language without a translation suffix), each as WebVTT, else SubRip.
    static func captions(_ info: [String: Any]) -> [(url: URL, language: String)] {
        var found: [(url: URL, language: String)] = []
        func add(_ list: [String: Any], only: (String) -> String?) {
            for language in list.keys.sorted() {
                guard found.count < 8, let tag = only(language), !found.contains(where: { $0.language == tag }),
                    let formats = list[language] as? [[String: Any]]
                else { continue }
                let pick = formats.first { $0["ext"] as? String == "vtt" } ?? formats.first { $0["ext"] as? String == "srt" }
                guard let text = pick?["url"] as? String, let url = URL(string: text),
                    ["http", "https"].contains(url.scheme?.lowercased() ?? "")
                else { continue }
                found.append((url, tag))
            }
        }
        add(info["subtitles"] as? [String: Any] ?? [:]) { $0 == "live_chat" ? nil : $0 }
        let own = info["language"] as? String
        add(info["automatic_captions"] as? [String: Any] ?? [:]) { key in
            key.hasSuffix("-orig") ? String(key.dropLast(5)) : key == own ? key : nil
        }
        return found
    }
}
