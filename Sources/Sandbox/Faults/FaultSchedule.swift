/// When a rule applies, relative to the moment it was received, and to which share of requests.
struct FaultSchedule: Sendable, Equatable {
    /// Delay before the rule starts.
    var after: Duration = .zero
    /// How long it lasts once started; nil: until cleared.
    var length: Duration?
    /// Faulty for `on`, healthy for `off`, repeating.
    var flap: (on: Duration, off: Duration)?
    /// The share of requests it applies to; nil: all.
    var share: Double?

    static func == (lhs: FaultSchedule, rhs: FaultSchedule) -> Bool {
        lhs.after == rhs.after && lhs.length == rhs.length && lhs.flap?.on == rhs.flap?.on && lhs.flap?.off == rhs.flap?.off
            && lhs.share == rhs.share
    }
}
