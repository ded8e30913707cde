@testable import ErrorBusDaemon
import Testing

/// The outbox's periodic rescan, the safety net for missed notifications, takes at most a
/// twentieth of the time: a rescan of a huge outbox spaces the next one out.
@Suite struct RescanSpacingTests {
    @Test func aQuickRescanComesBackAtTheIntervalASlowOneNineteenTimesItsDurationLater() {
        #expect(OutboxIngest.rescanSpacing(took: .milliseconds(40), interval: .seconds(30)) == .seconds(30))
        #expect(OutboxIngest.rescanSpacing(took: .seconds(6), interval: .seconds(30)) == .seconds(114))
        // While files wait for room, two seconds apart unless the rescan is slow.
        #expect(OutboxIngest.rescanSpacing(took: .milliseconds(100), interval: OutboxIngest.rejectedRescanInterval) == .seconds(2))
        #expect(OutboxIngest.rescanSpacing(took: .seconds(1), interval: OutboxIngest.rejectedRescanInterval) == .seconds(19))
    }
}
