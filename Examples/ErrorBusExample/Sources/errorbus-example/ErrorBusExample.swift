import ExampleDaemon
import Logging

@main
struct ErrorBusExample {
    static func main() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardOutput(label: label)
            handler.logLevel = .info
            return handler
        }
        try await Scenario.run(logger: Logger(label: "errorbus-example"))
    }
}
