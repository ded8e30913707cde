import ErrorBus

/// Turns a burst of network notifications into one change: the state machine behind
/// ``NetworkChangeMonitor``, with no I/O and no clock of its own.
///
/// A burst starts with its first notification and ends once none has arrived for `quiet`
/// (trailing-edge debounce), or `maximumDelay` after it started, whichever comes first — so an
/// interface that flaps without pause still produces a change every `maximumDelay`.
struct NetworkChangeDebouncer: Sendable {
    /// The burst being collected.
    private struct Burst: Sendable {
        var started: TimelineInstant
        var last: TimelineInstant
        var change: NetworkChange
    }

    /// How long without notifications ends a burst.
    let quiet: Duration
    /// The longest a burst is held back.
    let maximumDelay: Duration
    private var burst: Burst?

    init(quiet: Duration, maximumDelay: Duration) {
        self.quiet = quiet
        self.maximumDelay = max(quiet, maximumDelay)
    }

    /// Notifications arrived at `now`.
    mutating func record(_ change: NetworkChange, at now: TimelineInstant) {
        if burst == nil {
            burst = Burst(started: now, last: now, change: change)
        } else {
            burst!.last = max(burst!.last, now)
            burst!.change.merge(change)
        }
    }

    /// When the current burst ends, if one is being collected.
    var deadline: TimelineInstant? {
        burst.map { min($0.last.advanced(by: quiet), $0.started.advanced(by: maximumDelay)) }
    }

    /// The finished burst, if its deadline has passed at `now`; the debouncer is then empty.
    mutating func takeFinished(at now: TimelineInstant) -> NetworkChange? {
        guard let deadline, deadline <= now, let finished = burst else { return nil }
        burst = nil
        return finished.change
    }
}
