/// The xterm 256-colour palette: 16 system colours, a 6×6×6 cube and 24 greys.
public enum Palette256 {
    private static let cubeLevels: [Int] = [0, 95, 135, 175, 215, 255]
    private static let system: [(Int, Int, Int)] = [
        (0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205),
        (229, 229, 229), (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255),
        (0, 255, 255), (255, 255, 255),
    ]

    /// The colour of palette entry `index` (xterm's defaults for the 16 system colours).
    public static func rgb(_ index: UInt8) -> (r: Int, g: Int, b: Int) {
        let i = Int(index)
        if i < 16 { return system[i] }
        if i < 232 {
            let c = i - 16
            return (cubeLevels[c / 36], cubeLevels[(c / 6) % 6], cubeLevels[c % 6])
        }
        let grey = 8 + 10 * (i - 232)
        return (grey, grey, grey)
    }

    /// The nearest cube or grey entry (16…255: the system colours are themed by users, so pictures avoid them).
    public static func index(r: UInt8, g: UInt8, b: UInt8) -> UInt8 {
        let (ri, gi, bi) = (cubeStep(r), cubeStep(g), cubeStep(b))
        let cube = 16 + 36 * ri + 6 * gi + bi
        let average = (Int(r) + Int(g) + Int(b)) / 3
        let greyStep = Swift.max(0, Swift.min(23, (average - 3) / 10))
        let grey = 232 + greyStep
        let cubeDistance = distance((Int(r), Int(g), Int(b)), rgb(UInt8(cube)))
        let greyDistance = distance((Int(r), Int(g), Int(b)), rgb(UInt8(grey)))
        return UInt8(greyDistance < cubeDistance ? grey : cube)
    }

    /// Entry `index` as the nearest of the first `count` entries (8 or 16 on terminals with fewer colours).
    public static func reduce(_ index: UInt8, to count: Int) -> UInt8 {
        guard count < 256 else { return index }
        return count <= 8 ? reducedTo8[Int(index)] : reducedTo16[Int(index)]
    }

    private static let reducedTo8: [UInt8] = (0...255).map { nearest(rgb(UInt8($0)), among: 8) }
    private static let reducedTo16: [UInt8] = (0...255).map { nearest(rgb(UInt8($0)), among: 16) }

    private static func nearest(_ colour: (r: Int, g: Int, b: Int), among count: Int) -> UInt8 {
        var best = 0
        var bestDistance = Int.max
        for candidate in 0..<count {
            let d = distance((colour.r, colour.g, colour.b), rgb(UInt8(candidate)))
            if d < bestDistance {
                best = candidate
                bestDistance = d
            }
        }
        return UInt8(best)
    }

    private static func cubeStep(_ value: UInt8) -> Int {
        let v = Int(value)
        if v < 48 { return 0 }
        if v < 115 { return 1 }
        return Swift.min(5, (v - 35) / 40)
    }

    private static func distance(_ a: (Int, Int, Int), _ b: (r: Int, g: Int, b: Int)) -> Int {
        let (dr, dg, db) = (a.0 - b.r, a.1 - b.g, a.2 - b.b)
        return 2 * dr * dr + 4 * dg * dg + 3 * db * db
    }
}

/// The colours one cell asks for: palette entries, nil for the terminal's default.
public struct ColorRequest: Hashable, Sendable {
    /// Foreground entry.
    public var foreground: UInt8?
    /// Background entry.
    public var background: UInt8?

    /// A request.
    public init(foreground: UInt8?, background: UInt8?) {
        self.foreground = foreground
        self.background = background
    }
}

/// Colour pairs allocated on demand for pictures, within the terminal's pair limit. When a frame needs pairs the
/// table has no room for, every pair is recycled at once (and the caller redraws the whole screen, so no cell keeps
/// a pair that now means another colour); when one frame alone needs more pairs than the terminal has, its colours
/// are reduced (256 → 16 → 8 → no backgrounds) until they fit. A value: tested without a terminal.
public struct ColorPairTable: Sendable {
    /// A pair's colours as the terminal gets them (-1: default).
    public struct Combo: Hashable, Sendable {
        /// Foreground colour number.
        public var foreground: Int16
        /// Background colour number.
        public var background: Int16

        /// A combination.
        public init(foreground: Int16, background: Int16) {
            self.foreground = foreground
            self.background = background
        }
    }

    /// Colours the terminal has.
    public let colors: Int
    /// Pair numbers below this are the interface's own.
    public let firstPair: Int
    /// One past the highest pair number the terminal has.
    public let pairLimit: Int
    /// Colours used now: the terminal's (at most 256), fewer when a frame needed more pairs than exist.
    public private(set) var depth: Int
    /// False when even 8 colours needed too many pairs and cells keep only their foreground.
    public private(set) var backgrounds = true
    /// How often every pair was recycled.
    public private(set) var recycles = 0
    private var pairs: [Combo: Int] = [:]
    private var next: Int

    /// A table for a terminal with `colors` colours and `pairLimit` pairs, leaving pairs below `firstPair` alone.
    public init(colors: Int, pairLimit: Int, firstPair: Int) {
        self.colors = Swift.max(8, Swift.min(256, colors))
        self.pairLimit = pairLimit
        self.firstPair = firstPair
        depth = self.colors
        next = firstPair
    }

    /// Pairs allocated now.
    public var count: Int { pairs.count }

    /// The terminal colours for `request` at the current depth.
    public func combo(for request: ColorRequest) -> Combo {
        let foreground = request.foreground.map { Int16(Palette256.reduce($0, to: depth)) } ?? -1
        let background = backgrounds ? (request.background.map { Int16(Palette256.reduce($0, to: depth)) } ?? -1) : -1
        return Combo(foreground: foreground, background: background)
    }

    /// The pair for `request`, once allocated.
    public func pair(for request: ColorRequest) -> Int? { pairs[combo(for: request)] }

    /// Gives every request a pair. Returns the pairs to define on the terminal and whether all were recycled
    /// (then everything on screen must be drawn again).
    public mutating func allocate(_ requests: Set<ColorRequest>) -> (define: [(pair: Int, combo: Combo)], recycled: Bool) {
        var missing = Set(requests.map(combo(for:))).subtracting(pairs.keys)
        var recycled = false
        if next + missing.count > pairLimit {
            recycled = true
            recycles += 1
            pairs = [:]
            next = firstPair
            depth = colors
            backgrounds = true
            let capacity = Swift.max(0, pairLimit - firstPair)
            while Set(requests.map(combo(for:))).count > capacity {
                if depth > 16 {
                    depth = 16
                } else if depth > 8 {
                    depth = 8
                } else if backgrounds {
                    backgrounds = false
                } else {
                    break
                }
            }
            missing = Set(requests.map(combo(for:)))
        }
        var define: [(pair: Int, combo: Combo)] = []
        for combo in missing.sorted(by: { ($0.foreground, $0.background) < ($1.foreground, $1.background) }) {
            guard next < pairLimit else { break }
            pairs[combo] = next
            define.append((next, combo))
            next += 1
        }
        return (define, recycled)
    }
}
