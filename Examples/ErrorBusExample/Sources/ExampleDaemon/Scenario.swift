import ErrorBus
public import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The short scripted scenario `errorbus-example` plays against the simulated API.
public enum Scenario {
    static let host = "api.example.net"
    static let secret = "example-secret"

    /// Plays the scenario: the library in ten lines, then the daemon through a sign-in, an
    /// outage of the API and a rejected report; then stops the daemon with SIGTERM.
    public static func run(logger: Logger) async throws {
        let api = SimulatedAPI(host: host, secret: secret)

        logger.info("1. The library in ten lines: one job, before anyone signed in")
        await libraryInTenLines(
            api: api,
            credentials: Credentials(api: api, secret: secret),
            report: Report(id: "report-0", body: "first reading"),
            logger: logger
        )

        logger.info("2. The daemon: an uploader and a refresher on one bus")
        let daemon = await ExampleDaemon(api: api, secret: secret, refreshInterval: .seconds(5), logger: logger)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await daemon.run() }
            group.addTask {
                await script(daemon, api: api, logger: logger)
                logger.info("Done: SIGTERM, as `systemctl stop` sends it")
                kill(getpid(), SIGTERM)
            }
        }
        logger.info("The daemon stopped")
    }

    private static func script(_ daemon: ExampleDaemon, api: SimulatedAPI, logger: Logger) async {
        var outcomes = daemon.uploader.outcomes.makeAsyncIterator()

        logger.info("Not signed in yet: 10 reports; the first 401 signs in, once for both services")
        for number in 1...10 {
            daemon.uploader.enqueue(Report(id: "report-\(number)", body: "reading \(number)"))
        }
        for _ in 1...10 { _ = await outcomes.next() }
        let delivered = await daemon.uploader.delivered.count
        logger.info("\(delivered) reports delivered")

        logger.info("The API goes down for 2 seconds; 20 reports meanwhile")
        await api.goDown()
        for number in 11...30 {
            daemon.uploader.enqueue(Report(id: "report-\(number)", body: "reading \(number)"))
        }
        let answer = await daemon.uploader.sendNow(Report(id: "report-urgent", body: "urgent reading"))
        logger.info("sendNow answered at once: \(answer)")
        try? await Task.sleep(for: .seconds(2))
        await api.comeBack()
        logger.info("The API is back; the next probe finds it")
        for _ in 1...21 { _ = await outcomes.next() }
        let deliveredAfterOutage = await daemon.uploader.delivered.count
        logger.info("\(deliveredAfterOutage) reports delivered")

        logger.info("A report the API refuses: set aside as a dead letter, not retried")
        daemon.uploader.enqueue(Report(id: "report-empty", body: ""))
        if let (report, outcome) = await outcomes.next() {
            logger.info("\(report.id): \(outcome)")
        }

        logger.info("The API publishes a malformed setting: the refresher's responder keeps the last good one")
        await api.publish("")
        await daemon.refresher.refresh()
        await api.publish("goodbye")
        await daemon.refresher.refresh()

        let received = await api.received.count
        let setting = await daemon.refresher.setting.map { "\($0)" } ?? "none"
        logger.info("The API holds \(received) reports (report-0 from part 1); the setting in force: \(setting)")
    }
}
