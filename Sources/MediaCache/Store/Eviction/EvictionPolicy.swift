import Foundation

/// The budgets' arithmetic as a value: from what the cache holds, which kind of entry has to go next and why.
///
/// The store answers each demand with the least recently used entry of that kind that no one has pinned (or says
/// there is none left) and asks again, so the policy never touches the index, the disk or a lock and is tested
/// with plain numbers. Budgets are checked in a fixed order: each state's bytes, the entry count, the disk's free
/// space. A single entry larger than its state's budget but within both budgets together stays (it goes first
/// when anything needs room): a long video is not thrown away for being long.
struct EvictionPolicy: Sendable, Equatable {
    var partialByteLimit: Int64
    var completeByteLimit: Int64
    var partialMaxAge: TimeInterval
    var completeMaxAge: TimeInterval
    var maxEntries: Int?
    /// Free bytes to keep on the disk (0: not checked).
    var freeSpaceFloor: Int64

    /// The policy for `configuration`'s budgets with the store's free-space floor.
    init(configuration: CacheConfiguration, freeSpaceFloor: Int64) {
        partialByteLimit = configuration.partialByteLimit
        completeByteLimit = configuration.completeByteLimit
        partialMaxAge = configuration.partialMaxAge
        completeMaxAge = configuration.completeMaxAge
        maxEntries = configuration.maxEntries
        self.freeSpaceFloor = freeSpaceFloor
    }

    /// Both byte budgets together.
    var totalByteLimit: Int64 { partialByteLimit + completeByteLimit }

    /// An entry to evict: one of `state` (nil: of either state), for `reason`.
    struct Demand: Equatable, Sendable {
        var state: ResourceState?
        var reason: EvictionReason
    }

    /// For each state, entries last accessed before this date have expired.
    func expiryCutoffs(at date: Date) -> [(state: ResourceState, cutoff: Date)] {
        [(.partial, date.addingTimeInterval(-partialMaxAge)), (.complete, date.addingTimeInterval(-completeMaxAge))]
    }

    /// True when a byte budget is exceeded (a pass is due at once rather than at the next periodic check).
    func isOverBudget(_ usage: CacheUsage) -> Bool {
        usage.partialBytes > partialByteLimit || usage.completeBytes > completeByteLimit
    }

    /// True when the disk, with `freed` bytes still on their way out, has less free space than the floor.
    func isLowOnSpace(free: Int64?, freed: Int64) -> Bool {
        guard freeSpaceFloor > 0, let free else { return false }
        return free + freed < freeSpaceFloor
    }

    /// True when `state`'s budget is exceeded by a single entry that the total budget holds.
    func holdsOneOversizedEntry(_ usage: CacheUsage, _ state: ResourceState) -> Bool {
        let entries = state == .complete ? usage.completeEntries : usage.partialEntries
        return entries <= 1 && usage.partialBytes + usage.completeBytes <= totalByteLimit
    }

    /// One pass bringing every budget back within its limit (after expired entries went), rule by rule; a rule
    /// with nothing left to take is passed for the rest of the pass.
    struct Pass: Sendable {
        let policy: EvictionPolicy
        private var rule = Rule.partialBytes
        /// Bytes taken for the disk rule, not yet seen in the file system's free space (unlinking is in the
        /// background).
        private(set) var freed: Int64 = 0

        private enum Rule: Int, Comparable {
            case partialBytes, completeBytes, entries, diskSpace, done
            static func < (a: Rule, b: Rule) -> Bool { a.rawValue < b.rawValue }
        }

        /// Starts a pass under `policy`.
        init(_ policy: EvictionPolicy) { self.policy = policy }

        /// The next entry to evict given the cache's `usage` now (`freeSpace` is read only for the disk rule), or
        /// nil when every budget holds or nothing is left to take for those that do not.
        mutating func next(usage: CacheUsage, freeSpace: () -> Int64?) -> Demand? {
            while rule < .done {
                switch rule {
                case .partialBytes:
                    if usage.partialBytes > policy.partialByteLimit, !policy.holdsOneOversizedEntry(usage, .partial) {
                        return Demand(state: .partial, reason: .overBudget)
                    }
                case .completeBytes:
                    if usage.completeBytes > policy.completeByteLimit, !policy.holdsOneOversizedEntry(usage, .complete) {
                        return Demand(state: .complete, reason: .overBudget)
                    }
                case .entries:
                    if let maxEntries = policy.maxEntries, usage.entries > maxEntries {
                        return Demand(state: nil, reason: .tooManyEntries)
                    }
                case .diskSpace:
                    if policy.freeSpaceFloor > 0, policy.isLowOnSpace(free: freeSpace(), freed: freed) {
                        return Demand(state: nil, reason: .lowDiskSpace)
                    }
                case .done:
                    break
                }
                rule = Rule(rawValue: rule.rawValue + 1) ?? .done
            }
            return nil
        }

        /// The store evicted an entry holding `bytes` for the last demand.
        mutating func took(bytes: Int64) {
            if rule == .diskSpace { freed += bytes }
        }

        /// The store found no entry it may evict for the last demand: that rule is over for this pass.
        mutating func nothingLeft() {
            rule = Rule(rawValue: rule.rawValue + 1) ?? .done
        }
    }

    /// What making room for `newBytes` more partial bytes of one resource needs next.
    enum RoomStep: Equatable, Sendable {
        /// Evict an entry.
        case evict(Demand)
        /// The bytes fit.
        case fits
        /// They cannot be stored: only data in use could make room. The reason, as a sentence.
        case refuse(String)
    }

    /// Making room for a resource's new partial bytes: partial entries go first; when only the resource itself
    /// (or data in use) is partial, it may grow past the partial budget while the total budget holds, as
    /// completely cached entries make way for it.
    struct Room: Sendable {
        let policy: EvictionPolicy
        let newBytes: Int64
        /// Whether the resource is pinned (playing or preloading here): it may then outgrow the partial budget
        /// even beside other partial data in use.
        let pinned: Bool
        private var lastDemand: ResourceState?
        private var partialExhausted = false

        /// Starts making room for `newBytes` under `policy`.
        init(_ policy: EvictionPolicy, newBytes: Int64, pinned: Bool) {
            self.policy = policy
            self.newBytes = newBytes
            self.pinned = pinned
        }

        /// The next step given the cache's `usage` now.
        mutating func next(usage: CacheUsage) -> RoomStep {
            guard usage.partialBytes + newBytes > policy.partialByteLimit else { return .fits }
            if !partialExhausted {
                lastDemand = .partial
                return .evict(Demand(state: .partial, reason: .overBudget))
            }
            guard usage.partialEntries <= 1 || pinned else {
                return .refuse("the partial-data budget (\(policy.partialByteLimit) bytes) is full of data in use")
            }
            if usage.partialBytes + usage.completeBytes + newBytes <= policy.totalByteLimit { return .fits }
            lastDemand = .complete
            return .evict(Demand(state: .complete, reason: .overBudget))
        }

        /// The store evicted an entry for the last demand. After a complete entry went, partial entries are
        /// looked for again (another process may have added some).
        mutating func took() {
            if lastDemand == .complete { partialExhausted = false }
        }

        /// The store found no entry it may evict for the last demand; returns the refusal when that ends it.
        mutating func nothingLeft() -> String? {
            if lastDemand == .partial {
                partialExhausted = true
                return nil
            }
            return "the cache budget (\(policy.totalByteLimit) bytes) is full of data in use"
        }
    }

    /// The refusal when the disk stays below the floor with nothing left to evict.
    var lowDiskRefusal: String { "the disk has less than \(freeSpaceFloor) bytes free and nothing left to evict" }
}
