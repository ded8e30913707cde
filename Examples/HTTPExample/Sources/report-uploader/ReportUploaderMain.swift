import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
import Logging
import ReportUploader

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `report-uploader API-URL TEXT...`: uploads each text as a report to the API at `API-URL`,
/// waiting out its outages and rate limits, and stops once each has its outcome (or on SIGTERM or
/// SIGINT). Exits 1 when a report was not delivered.
@main
struct ReportUploaderMain {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        guard let baseURL = arguments.first, arguments.count >= 2 else {
            var usage = "usage: report-uploader API-URL TEXT...\n"
            usage.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
            exit(64)
        }
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let logger = Logger(label: "report-uploader")

        let reports = arguments.dropFirst().enumerated().map { Report(id: "report-\($0.offset + 1)", text: $0.element) }
        // sample: http-client
        // No redirects followed (a captive portal's redirect must be seen), bounded connect and
        // read timeouts, no decompression (body limits count the bytes on the wire).
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .errorbusAPI())
        // end sample
        let outcomes: [(Report, ReportUploader.Outcome)]
        do {
            outcomes = try await UploadDaemon(api: ReportAPI(baseURL: baseURL), client: client, logger: logger).upload(reports)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()

        var delivered = 0
        for (report, outcome) in outcomes {
            switch outcome {
            case .delivered(let receipt):
                delivered += 1
                print("\(report.id): delivered (receipt \(receipt.id))")
            case .notSent(let stopped):
                print("\(report.id): not sent: \(stopped.failure?.text.message ?? "\(stopped.reason)")")
            }
        }
        exit(delivered == reports.count ? 0 : 1)
    }
}
