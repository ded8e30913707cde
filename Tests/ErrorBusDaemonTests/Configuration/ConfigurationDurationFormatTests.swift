import ErrorBusUnits
import Testing

@testable import ErrorBusDaemon

@Suite struct ConfigurationDurationFormatTests {
    @Test(arguments: [
        ("30", Duration.seconds(30)),
        ("0.5", .milliseconds(500)),
        ("0.1", .milliseconds(100)),
        ("1_000", .seconds(1_000)),
        ("0", .zero),
        ("500ms", .milliseconds(500)),
        ("30s", .seconds(30)),
        ("5m", .seconds(300)),
        ("1h", .seconds(3_600)),
        ("2d", .seconds(172_800)),
        ("1.5h", .seconds(5_400)),
        ("250us", .microseconds(250)),
        ("250µs", .microseconds(250)),
        ("10ns", .nanoseconds(10)),
        ("30 s", .seconds(30)),
        (" 30s ", .seconds(30)),
        ("1h30m", .seconds(5_400)),
        ("1m 30s", .seconds(90)),
        ("2min", .seconds(120)),
        ("10 seconds", .seconds(10)),
        ("3 hours", .seconds(10_800)),
        ("1S", .seconds(1)),
        ("100MS", .milliseconds(100)),
    ])
    func parses(text: String, expected: Duration) {
        #expect(DurationFormat.parse(text) == expected)
    }

    @Test(arguments: [
        "", " ", "s", "-1", "-5s", "5 fortnights", "1e3", "inf", "nan", "1.2.3", "1h30", "30s 10",
        "1__0", "_1", "1_", ".", "5s!", "1,5s", "99999999999999999999999999999999999999h",
    ])
    func rejects(text: String) {
        #expect(DurationFormat.parse(text) == nil)
    }

    @Test(arguments: [
        (Duration.seconds(30), "30s"),
        (.seconds(300), "5m"),
        (.seconds(3_600), "1h"),
        (.seconds(86_400), "1d"),
        (.milliseconds(10), "10ms"),
        (.milliseconds(1_500), "1500ms"),
        (.zero, "0s"),
        (.nanoseconds(5), "5ns"),
    ])
    func formats(duration: Duration, expected: String) {
        #expect(DurationText.exact(duration) == expected)
        #expect(DurationFormat.parse(expected) == duration)
    }
}
