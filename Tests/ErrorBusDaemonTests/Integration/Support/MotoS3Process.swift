import Foundation
import TestSupport

/// moto's S3 server on a loopback port with its authentication on (`scripts/lib/moto_s3.py`):
/// object storage nobody here wrote, which checks every request's AWS Signature Version 4 against
/// an access key it made, and refuses a wrong one with `SignatureDoesNotMatch`.
final class MotoS3Process: Sendable {
    struct Info: Decodable, Sendable {
        var endpoint: String
        var region: String
        var bucket: String
        var accessKeyId: String
        var secretAccessKey: String
        /// moto's own process: `SIGSTOP` makes the store hang, `SIGCONT` lets it answer again.
        var serverPid: Int32
    }

    let info: Info
    private let child: ChildProcess

    static var script: String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/lib/moto_s3.py").path
    }

    /// Starts it with bucket `bucket`, and waits for the credentials it prints; `log` is where
    /// moto writes a line per request it answered.
    init(bucket: String = "errorbus-test", log: String? = nil) async throws {
        guard let python = ChildProcess.find("python3") else { throw ChildProcessError(description: "python3 is not installed") }
        child = try ChildProcess(python, ["-u", Self.script, "--port", "0", "--bucket", bucket] + (log.map { ["--log", $0] } ?? []))
        guard await child.waitForStandardOutput(containing: "}\n"),
            let line = child.standardOutput.text.split(separator: "\n").first(where: { $0.hasPrefix("{") })
        else {
            let finished = await child.waitForExit()
            throw ChildProcessError(description: "moto did not start (scripts/test installs moto[server] and boto3):\n\(finished.standardError)")
        }
        info = try JSONDecoder().decode(Info.self, from: Data(line.utf8))
    }

    func stop() async {
        child.terminate()
        _ = await child.waitForExit()
    }
}
