import Foundation
import MediaCache

extension StoryController {
    /// The picture box players decode at: the screen's, else the configuration's.
    var decodeBox: (width: Int, height: Int) {
        state.withLockedValue { $0.pictureBox } ?? (session.configuration.pictureWidth, session.configuration.pictureHeight)
    }

    /// Watches the playing story (generation `generation`) until the task is cancelled: feeds the preload gate,
    /// and once the stories → and auto-advance go to are preloaded, decodes their first frames ahead while the gate
    /// is open (the playing story has enough buffered), so they show at once.
    func watch(_ player: Player, generation: Int) async {
        await session.preload?.watch(player, clock: session.clock) { [self] in decodeAhead(generation: generation) }
    }

    /// Starts decoding the first frames of the preloaded stories next in line (at most one decode at a time).
    func decodeAhead(generation: Int) {
        guard session.configuration.decodesVideo, session.configuration.decodesAhead, let driver = session.preload,
            driver.isOpen
        else { return }
        let (navigator, current) = state.withLockedValue { ($0.navigator, $0.generation == generation) }
        guard current, let index = navigator.index else { return }
        let ready = PreloadPolicy.upcoming(after: index, navigator: navigator).filter { driver.isPreloaded(keys[$0]) }
        ahead.want(ready.map { ($0, keys[$0]) }, box: decodeBox) { [session] story in
            session.makePlayer(for: story) { _ in }
        }
    }
}
