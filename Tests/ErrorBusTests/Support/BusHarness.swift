import ErrorBusTesting

extension ManualClock.Instant {
    static func seconds(_ seconds: Double) -> ManualClock.Instant {
        ManualClock.Instant(offset: .seconds(seconds))
    }
}
