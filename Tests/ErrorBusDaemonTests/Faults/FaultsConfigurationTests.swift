import Foundation
import Glibc
import TestSupport
import Testing

extension Faults {
    /// The real `errorbusd --check-config` on broken configurations: each run either accepts the
    /// configuration (0) or exits 78 with one line on standard error naming the file or the
    /// variable, the key and why. Never a signal, never a stack trace.
    @Suite(.timeLimit(.minutes(3)))
    struct ConfigurationFuzz {
        /// Seeded mutations of the example configuration; `ERRORBUS_FAULT_CONFIG_RUNS` for more.
        static let runs = ProcessInfo.processInfo.environment["ERRORBUS_FAULT_CONFIG_RUNS"].flatMap { Int($0) } ?? 300

        /// A directory with a client secret and the example configuration, its paths moved there.
        final class Fixture {
            let scratch: ScratchDirectory
            let example: String
            let environment: [String: String]

            init() throws {
                scratch = try ScratchDirectory("faults-config")
                let root = scratch.path
                try FileManager.default.createDirectory(atPath: root + "/credentials", withIntermediateDirectories: true)
                try "s3cret\n".write(toFile: root + "/credentials/client-secret", atomically: true, encoding: .utf8)
                let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../etc/errorbusd/errorbusd.yaml").standardized.path
                example = try String(contentsOfFile: source, encoding: .utf8)
                    .replacingOccurrences(of: "/var/spool/errorbusd", with: root + "/spool")
                    .replacingOccurrences(of: "/var/lib/errorbusd", with: root + "/lib")
                    .replacingOccurrences(of: "  directory:\n", with: "  directory: \(root)/state\n")
                    .replacingOccurrences(of: "  socket-path:\n", with: "  socket-path: \(root)/control.socket\n")
                var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ERRORBUSD_") }
                for name in ["STATE_DIRECTORY", "RUNTIME_DIRECTORY", "NOTIFY_SOCKET", "WATCHDOG_USEC", "JOURNAL_STREAM", "CREDENTIALS_DIRECTORY"] {
                    environment.removeValue(forKey: name)
                }
                environment["CREDENTIALS_DIRECTORY"] = root + "/credentials"
                self.environment = environment
            }

            func write(_ name: String, _ contents: [UInt8]) throws -> String {
                let path = scratch.file(name)
                try Data(contents).write(to: URL(fileURLWithPath: path))
                return path
            }
        }

        /// Runs `errorbusd --check-config` (as `prefix`, e.g. setpriv, when given) and checks the
        /// contract; returns the run.
        @discardableResult
        static func check(
            _ file: String,
            environment: [String: String],
            prefix: [String] = [],
            what: @autoclosure () -> String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> ChildProcess.Finished {
            let command = prefix + [Binaries.path("errorbusd"), "--check-config", "--config", file]
            let finished = try await ChildProcess.run(command[0], Array(command.dropFirst()), environment: environment)
            let stderr = finished.standardError
            #expect(finished.status == 0 || finished.status == 78, "\(what()): exit \(finished.status)\n\(stderr)", sourceLocation: sourceLocation)
            for crash in ["Fatal error", "Stack dump", "Current stack trace", "Segmentation fault", "Illegal instruction"] {
                #expect(!stderr.contains(crash), "\(what()): \(stderr)", sourceLocation: sourceLocation)
            }
            if finished.status == 78 {
                #expect(finished.errorLines.count == 1, "\(what()): not one line:\n\(stderr)", sourceLocation: sourceLocation)
                #expect(stderr.hasPrefix("errorbusd: "), "\(what()): \(stderr)", sourceLocation: sourceLocation)
                // The file (with its line) or the variable, or at least the key, then why.
                let namesWhere = stderr.contains(file) || stderr.contains("environment variable ERRORBUSD_")
                    || stderr.range(of: #"errorbusd: [a-z-]+(\.[a-z-]+)+: \S"#, options: .regularExpression) != nil
                #expect(namesWhere, "\(what()): names neither the file, the variable nor a key: \(stderr)", sourceLocation: sourceLocation)
            }
            return finished
        }

        @Test func namedBreakagesExit78SayingWhereAndWhy() async throws {
            let fixture = try Fixture()
            let valid = try fixture.write("valid.yaml", Array(fixture.example.utf8))
            let accepted = try await Self.check(valid, environment: fixture.environment, what: "the example")
            #expect(accepted.status == 0, "\(accepted.standardError)")

            let cases: [(String, String, String)] = [
                ("wrong type", fixture.example.replacingOccurrences(of: "  concurrency: 16\n  # Deprecated", with: "  concurrency: [1, 2]\n  # Deprecated"), "sync.concurrency"),
                ("wrong type", fixture.example.replacingOccurrences(of: "rescan-interval: 30s", with: "rescan-interval: {a: 1}"), "sync.rescan-interval"),
                ("unknown key", fixture.example.replacingOccurrences(of: "  max-file-size: 100MiB\n", with: "  max-file-size: 100MiB\n  turbo: true\n"), "sync.turbo"),
                ("the secret in the file", fixture.example.replacingOccurrences(of: "  client-id: errorbus\n", with: "  client-id: errorbus\n  client-secret: hunter2\n"), "auth.client-secret"),
            ]
            for (what, yaml, key) in cases {
                try #require(yaml != fixture.example, "\(what): the example changed; the case no longer applies")
                let file = try fixture.write("case.yaml", Array(yaml.utf8))
                let finished = try await Self.check(file, environment: fixture.environment, what: what)
                #expect(finished.status == 78, "\(what)")
                #expect(finished.standardError.contains(key), "\(what): \(finished.standardError)")
            }

            // No secret anywhere: outside the service the check looks beside the file, where
            // errorbusd.service loads the credential from.
            var noSecret = fixture.environment
            noSecret.removeValue(forKey: "CREDENTIALS_DIRECTORY")
            let missing = try await Self.check(valid, environment: noSecret, what: "no secret")
            #expect(missing.status == 78)
            #expect(missing.standardError.contains("auth.credential-name: cannot read the client secret \(fixture.scratch.file("client-secret"))"), "\(missing.standardError)")

            // A directory where the file should be.
            let directory = fixture.scratch.file("a-directory.yaml")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            let isDirectory = try await Self.check(directory, environment: fixture.environment, what: "a directory")
            #expect(isDirectory.status == 78)

            // Unreadable to the user errorbusd runs as (root reads anything: run it as nobody).
            #expect(chmod(fixture.scratch.path, 0o755) == 0)
            #expect(chmod(fixture.scratch.path + "/credentials", 0o755) == 0)
            #expect(chmod(valid, 0o644) == 0)
            let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            let secret = fixture.scratch.path + "/credentials/client-secret"
            #expect(chmod(secret, 0o644) == 0)
            let readable = try await Self.check(valid, environment: fixture.environment, prefix: nobody, what: "as nobody")
            #expect(readable.status == 0, "\(readable.standardError)")
            let unreadable = try fixture.write("unreadable.yaml", Array(fixture.example.utf8))
            #expect(chmod(unreadable, 0o000) == 0)
            let refused = try await Self.check(unreadable, environment: fixture.environment, prefix: nobody, what: "unreadable file")
            #expect(refused.status == 78)
            #expect(refused.standardError.contains("Permission denied"), "\(refused.standardError)")
            #expect(chmod(secret, 0o000) == 0)
            let secretRefused = try await Self.check(valid, environment: fixture.environment, prefix: nobody, what: "unreadable secret")
            #expect(secretRefused.status == 78)
            #expect(secretRefused.standardError.contains(secret), "\(secretRefused.standardError)")
        }

        static let badValues = [
            "", "~", "-1", "0", "eight", "1e999", "99999999999999999999999", "[a, b]", "{x: 1}", "yes", "\"\"",
            "'unterminated", "\"unterminated", "relative/path", "/", "0s", "-5s", "1ms", "10 parsecs", "0.0", "NaN",
            "!!binary aGVsbG8=", "&anchor 1", "*alias", "|\n  block", ">-", "- item", "%", "@", "`", "\u{0}", "\u{FEFF}x",
            "ftp://example.net", "http://", "http://[::1", "1MiB", "-1KiB", "18446744073709551616B", "💥",
        ]

        /// One random change to `text`: a value replaced, a line dropped, doubled, moved, indented
        /// or broken, an unknown key, the file cut short or bytes that are not text.
        static func mutate(_ text: [UInt8], using generator: inout SeededGenerator) -> [UInt8] {
            var lines = String(decoding: text, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let settings = lines.indices.filter { !lines[$0].trimmingCharacters(in: .whitespaces).hasPrefix("#") && !lines[$0].trimmingCharacters(in: .whitespaces).isEmpty }
            guard let line = settings.randomElement(using: &generator) else { return text }
            switch Int.random(in: 0..<10, using: &generator) {
            case 0, 1, 2:
                if let colon = lines[line].firstIndex(of: ":") {
                    lines[line] = String(lines[line][...colon]) + " " + Self.badValues.randomElement(using: &generator)!
                }
            case 3: lines.remove(at: line)
            case 4: lines.insert(lines[line], at: line)
            case 5:
                let indentation = String(lines[line].prefix { $0 == " " })
                lines.insert(indentation + ["bogus", "sync", "api", "concurrency", "Sync", "sync.concurrency"].randomElement(using: &generator)! + ": 1", at: line)
            case 6: lines[line] = ["", "  ", "    ", "\t", " "].randomElement(using: &generator)! + lines[line].drop { $0 == " " }
            case 7:
                let other = settings.randomElement(using: &generator)!
                lines.swapAt(line, other)
            case 8:
                return Array(text.prefix(Int.random(in: 0...text.count, using: &generator)))
            default:
                var bytes = text
                let at = Int.random(in: 0...bytes.count, using: &generator)
                bytes.insert(contentsOf: (0..<Int.random(in: 1...8, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }, at: at)
                return bytes
            }
            return Array(lines.joined(separator: "\n").utf8)
        }

        @Test func randomMutationsOfTheExampleStartOrExit78() async throws {
            var generator = SeededGenerator(seed: Faults.seed(for: "configuration fuzz"))
            let fixture = try Fixture()
            let base = Array(fixture.example.utf8)
            var inputs: [[UInt8]] = []
            for _ in 0..<Self.runs {
                var text = base
                for _ in 0..<Int.random(in: 1...3, using: &generator) { text = Self.mutate(text, using: &generator) }
                inputs.append(text)
            }
            let files = try inputs.enumerated().map { try fixture.write("mutation-\($0.offset).yaml", $0.element) }
            let environment = fixture.environment
            // Two at a time: the machine has two cores.
            var statuses: [Int32: Int] = [:]
            try await withThrowingTaskGroup(of: Int32.self) { group in
                var next = 0
                func add() {
                    let file = files[next]
                    group.addTask {
                        let contents = (try? String(contentsOfFile: file, encoding: .utf8)) ?? "(not UTF-8)"
                        return try await Self.check(file, environment: environment, what: "\(file):\n\(contents)").status
                    }
                    next += 1
                }
                for _ in 0..<min(2, files.count) { add() }
                while let status = try await group.next() {
                    statuses[status, default: 0] += 1
                    if next < files.count { add() }
                }
            }
            print("configuration fuzz: \(Self.runs) runs, exit statuses \(statuses)")
            #expect(statuses[78, default: 0] > 0)
        }
    }
}
