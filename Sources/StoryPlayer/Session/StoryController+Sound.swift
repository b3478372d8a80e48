import Foundation

extension StoryController {
    /// Opens the sound device (unless the session starts muted) and says where sound goes, or why there is none:
    /// at once when that is known before anything plays, else once the device opened or could not.
    func announceSound() {
        guard let sound = session.sound else { return }
        if session.startsMuted {
            emit(.sound(output: nil, reason: "muted (--mute): the device opens when unmuted (m)"))
            return
        }
        if case .unavailable(let reason) = sound.availability {
            // Known before anything plays (sound turned off, or a speed other than 1): said first.
            emit(.sound(output: nil, reason: reason))
            return
        }
        sound.start()
        // Said once the device opened or could not (a server that does not answer takes a while).
        Task { [self] in
            let availability = await sound.settled()
            guard !state.withLockedValue({ $0.stopped }) else { return }
            switch availability {
            case .ready(let name): emit(.sound(output: name, reason: nil))
            case .unavailable(let reason): emit(.sound(output: nil, reason: reason))
            case .opening: break
            }
        }
    }
}
