import ErrorBus

/// When sync applies its retention, and what of it the journal has yet to hear, in one value on
/// the service's clock. Its transitions are pure; ``SyncService`` does what they call for.
///
/// The dead letters beyond `sync.dead-letters.*` are given up at the first wake-up a minute after
/// the last pass (a rescan wakes the dispatcher every `sync.rescan-interval`), and at once when a
/// dead letter goes over the count; the delivered jobs beyond `sync.delivered-retention` are
/// forgotten at most hourly, a walk of every delivered job being too much for each minute. What a
/// pass gives up is told at most once a minute, not once per dead letter of a burst.
struct RetentionSchedule {
    /// How often dead letters beyond their retention are given up, at most.
    static let deadLetterInterval = Duration.seconds(60)
    /// How often delivered jobs beyond their retention are forgotten, at most.
    static let deliveredInterval = Duration.seconds(3_600)

    /// What is due at a wake-up.
    struct Due: Equatable {
        var deadLetters = false
        var delivered = false
    }

    /// Dead letters given up and not told yet, by the limit that gave them up.
    struct GivenUp: Equatable {
        var overCount = 0
        var tooOld = 0

        var isEmpty: Bool { overCount == 0 && tooOld == 0 }
    }

    private var nextDeadLetterPass: TimelineInstant?
    private var nextDeliveredPass: TimelineInstant?
    /// A dead letter went over `sync.dead-letters.max-count`: a pass before the next periodic one.
    private(set) var overCount = false
    private var untold = GivenUp()
    private var lastTold: TimelineInstant?

    /// What is due at `now`, and from then on scheduled again: everything at the first wake-up.
    mutating func due(at now: TimelineInstant) -> Due {
        var due = Due()
        if overCount || nextDeadLetterPass.map({ now >= $0 }) ?? true {
            overCount = false
            nextDeadLetterPass = now.advanced(by: Self.deadLetterInterval)
            due.deadLetters = true
        }
        if nextDeliveredPass.map({ now >= $0 }) ?? true {
            nextDeliveredPass = now.advanced(by: Self.deliveredInterval)
            due.delivered = true
        }
        return due
    }

    /// The dead letters went over their count (or more were set aside for room): a pass at the
    /// next wake-up.
    mutating func wentOverCount() {
        overCount = true
    }

    /// A pass gave up `givenUp`; returns what to tell now, all that was not told before, once a
    /// minute at most; `nil`: nothing, or not yet.
    mutating func gaveUp(_ givenUp: GivenUp, at now: TimelineInstant) -> GivenUp? {
        untold.overCount += givenUp.overCount
        untold.tooOld += givenUp.tooOld
        guard !untold.isEmpty, lastTold.map({ now >= $0.advanced(by: Self.deadLetterInterval) }) ?? true else { return nil }
        defer {
            untold = GivenUp()
            lastTold = now
        }
        return untold
    }
}
