import Foundation

/// Ages as a person says them: `just now`, `5 min ago`, `3 h ago`, `2 d ago`.
public enum AgeText {
    /// How long before `now` `date` was.
    public static func ago(_ date: Date, now: Date) -> String {
        let seconds = max(0, now.timeIntervalSince(date))
        if seconds < 60 { return "just now" }
        if seconds < 3600 { return "\(Int(seconds / 60)) min ago" }
        if seconds < 86_400 { return "\(Int(seconds / 3600)) h ago" }
        return "\(Int(seconds / 86_400)) d ago"
    }
}
