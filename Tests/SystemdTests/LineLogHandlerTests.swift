import Foundation
import Logging
import Systemd
import Testing

/// The lines errorbusd writes on standard error: time, level and message first, the fields after.
@Suite struct LineLogHandlerTests {
    struct Upload: Error, CustomStringConvertible {
        var description: String { "upload of job 7 failed" }
    }

    /// The line's time, then the rest.
    private static func split(_ line: Substring) throws -> (time: Date, rest: Substring) {
        let space = try #require(line.firstIndex(of: " "))
        let strategy = Date.ISO8601FormatStyle(timeZone: .current).year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted)
        let time = try Date(String(line[..<space]), strategy: strategy)
        return (time, line[line.index(after: space)...])
    }

    @Test func aLineLeadsWithTimeLevelAndMessageThenTheFieldsSorted() throws {
        let capture = try FallbackCapture()
        var logger = Logger(label: "errorbusd") { _ in LineLogHandler(fileDescriptor: capture.writeEnd) }
        logger[metadataKey: "ERRORBUS_SERVICE"] = "sync"
        let before = Date()
        logger.notice(
            "incident 1 opened: API unreachable",
            metadata: ["MESSAGE_ID": "e44d68978ee64cfc9599df6a0d606e34", "ERRORBUS_CATEGORY": "unreachable", "reason": "no route to host", "empty": ""]
        )
        logger.info("two\nlines", metadata: ["quote": #"say "hi" \ bye"#])
        logger.error("upload failed", error: Upload())
        logger.debug("not written at info")

        let lines = try capture.captured().split(separator: "\n")
        try #require(lines.count == 3, "\(lines)")
        let (time, first) = try Self.split(lines[0])
        #expect(abs(time.timeIntervalSince(before)) < 60)
        #expect(
            first == #"notice incident 1 opened: API unreachable ERRORBUS_CATEGORY=unreachable ERRORBUS_SERVICE=sync MESSAGE_ID=e44d68978ee64cfc9599df6a0d606e34 empty="" reason="no route to host""#
        )
        #expect(try Self.split(lines[1]).rest == #"info two\nlines ERRORBUS_SERVICE=sync quote="say \"hi\" \\ bye""#, "\(lines[1])")
        #expect(try Self.split(lines[2]).rest == #"error upload failed ERRORBUS_SERVICE=sync error.message="upload of job 7 failed" error.type=SystemdTests.LineLogHandlerTests.Upload"#, "\(lines[2])")
    }
}
