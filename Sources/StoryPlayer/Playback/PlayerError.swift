/// A playback failure with its cause.
struct PlayerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
