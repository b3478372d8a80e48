import Foundation
import StoriesUI
import StoryPlayer
import NIOConcurrencyHelpers
import Terminal

/// A flag one thread raises and another polls (a signal asking the UI to quit).
final class StopFlag: Sendable {
    private let raised = NIOLockedValueBox(false)
    /// Raises the flag.
    func raise() { raised.withLockedValue { $0 = true } }
    /// True once raised.
    var isRaised: Bool { raised.withLockedValue { $0 } }
}

/// Lets a closure cancel a task that is created after it.
final class TaskHandle: Sendable {
    private let cancelTask = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
    private let cancelled = NIOLockedValueBox(false)
    /// Remembers `task`, cancelling it at once when `cancel` came first.
    func set<Success: Sendable, Failure: Error>(_ task: Task<Success, Failure>) {
        cancelTask.withLockedValue { $0 = { task.cancel() } }
        if cancelled.withLockedValue({ $0 }) { task.cancel() }
    }
    /// Cancels the task (now, or as soon as it is set).
    func cancel() {
        cancelled.withLockedValue { $0 = true }
        cancelTask.withLockedValue { $0 }?()
    }
}

/// The interactive stories screen. Curses is single-threaded, so one dedicated thread owns it from start to stop:
/// it renders the controller's snapshot ten times a second, fifty while a picture plays (drawing only the cells
/// that changed), reads keys and clicks, and gives the terminal back on quit, on a signal and on any error.
enum TerminalApp {
    /// Runs the UI until the viewer quits or `stop` is raised.
    static func run(
        controller: StoryController, stop: StopFlag, picture: PictureProtocol? = nil, captions: CaptionMode = .auto
    ) async throws {
        // The screen waits for keys, and is woken by what its players show (a first frame is drawn when decoded).
        let wake = TerminalWake()
        let updates = controller.session.updates
        let forwarding = wake.map { wake in
            Task.detached {
                var seen = updates.version
                while !Task.isCancelled {
                    await updates.wait(after: seen)
                    seen = updates.version
                    wake.signal()
                }
            }
        }
        let result: Result<Void, Error> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result {
                    try loop(controller: controller, stop: stop, picture: picture, captions: captions, wake: wake)
                })
            }
            thread.name = "stories-tui.terminal"
            thread.start()
        }
        forwarding?.cancel()
        await controller.stop()
        try result.get()
    }

    private static func loop(
        controller: StoryController, stop: StopFlag, picture: PictureProtocol?, captions: CaptionMode,
        wake: TerminalWake?
    ) throws {
        let screen = try TerminalScreen(picture: picture)
        defer { screen.stop() }
        // Said only when asked (STORIES_LOG_LEVEL=info): lines on stderr would cross the screen.
        CLILogging.logger(quiet: true).info(
            "pictures: \(PictureRenderer.description(of: screen.output))\(picture == nil ? " (detected)" : " (--picture)")")
        var model = StoriesScreen(
            snapshot: controller.snapshot(), unicode: screen.unicode, color: screen.color, output: screen.output)
        model.captions = captions
        controller.start()
        var box: (width: Int, height: Int)?
        while !stop.isRaised {
            model.snapshot = controller.snapshot()
            let size = screen.size
            if let wanted = StoriesRenderer.pictureBox(model, width: size.width, height: size.height),
                box.map({ $0 != wanted }) ?? true
            {
                box = wanted
                controller.setPictureBox(wanted)
            }
            screen.draw(StoriesRenderer.render(model, width: size.width, height: size.height))
            // Chosen automatically: a video whose images the terminal cannot take smoothly is drawn with cells
            // from then on (stills stay images).
            if picture == nil, model.imagesForVideo, model.showsMovingPicture, screen.imagesKeepUp == false
            {
                model.imagesForVideo = false
                CLILogging.logger(quiet: true).info(
                    "pictures: video as cells from now on (the terminal takes images too slowly for 24 fps)")
            }
            // A playing picture is redrawn twice per frame shown (at most 50 times a second; only changed cells go
            // out), so each frame stays up equally long; text ten times a second.
            let moving = model.snapshot.frame != nil && model.snapshot.status?.state == .playing
            let frameMs = model.snapshot.status?.frameInterval.map { Int(($0 * 500).rounded(.down)) } ?? 20
            // (Between redraws of a moving picture the players' news is not waited on: the next redraw shows it.)
            let input = moving
                ? screen.read(timeoutMs: Swift.max(8, Swift.min(20, frameMs)))
                : screen.read(timeoutMs: 100, wake: wake)
            guard let input else {
                // A closed terminal makes every read fail at once: leave rather than spin.
                if screen.isGone { return }
                continue
            }
            let action = KeyMap.action(for: input, width: size.width)
            if model.helpOpen, action != .relayout {
                // Any key closes the help, as in htop.
                model.helpOpen = false
                continue
            }
            switch action {
            case .command(let command)?: controller.perform(command)
            case .togglePane?: model.paneOpen.toggle()
            case .toggleHelp?: model.helpOpen.toggle()
            case .toggleCaptions?:
                model.captions = model.toggledCaptions
                // Kept for the next runs (one small file).
                CaptionSettings.remember(model.captions)
            case .relayout?: screen.invalidate()
            case .quit?: return
            case nil: break
            }
        }
    }
}
