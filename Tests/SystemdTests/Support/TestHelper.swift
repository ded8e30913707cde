import Foundation
import TestSupport

/// The `systemd-test-helper` executable, built next to the test binary.
enum TestHelper {
    static var path: String {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("systemd-test-helper").path
    }

    /// Runs the helper with `arguments`, seeing exactly `environment`.
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> ChildProcess.Finished {
        try await ChildProcess.run(self.path, arguments, environment: environment)
    }
}
