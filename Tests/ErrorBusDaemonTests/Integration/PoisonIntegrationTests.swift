import ErrorBusControl
import ErrorBusStore
import Foundation
import Glibc
import TestSupport
import Testing
import Varlink

/// One bad thing must not stop a host: a file the API refuses (nginx answering one name badly),
/// a resource that fails, a rate limit on another server. In each, the good files go within
/// seconds of the bad one failing, the bad one ends as a dead letter naming its file and cause,
/// health says what is wrong, and nothing is lost, across a restart too.
@Suite(
    "Integration: one bad file or resource does not stop a host",
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: NginxProcess.executable != nil, "nginx is not installed (scripts/test installs nginx-light)")
)
struct PoisonIntegrationTests {
    /// What nginx does with `poison.bin`; every other name is stored by WebDAV.
    enum Poison: String, CaseIterable, CustomTestStringConvertible {
        case serverError = "500"
        case badGateway = "502"
        case noAnswer = "no answer"
        case rateLimited = "429 for one name"

        var testDescription: String { rawValue }

        /// The `location` that answers `poison.bin` so; `{blackhole}` is a port that accepts and
        /// never answers.
        var location: String {
            switch self {
            case .serverError: "location = /dav/incoming/poison.bin { return 500; }"
            case .badGateway: "location = /dav/incoming/poison.bin { return 502; }"
            case .noAnswer: "location = /dav/incoming/poison.bin { proxy_pass http://127.0.0.1:{blackhole}; proxy_read_timeout 1h; }"
            case .rateLimited: "location = /dav/incoming/poison.bin { add_header Retry-After 1 always; return 429; }"
            }
        }

        /// What the dead letter's reason says of the cause.
        var cause: String {
            switch self {
            case .serverError: "500"
            case .badGateway: "502"
            case .noAnswer: "too slow"
            case .rateLimited: "429"
            }
        }
    }

    static func server(_ poison: Poison, blackhole: Int) -> String {
        """
        server {
            listen 127.0.0.1:{port};
            location = /healthz { return 204; }
            \(poison.location.replacing("{blackhole}", with: String(blackhole)))
            location /dav/ {
                root {root}/html;
                dav_methods PUT;
                create_full_put_path on;
                auth_basic "errorbus";
                auth_basic_user_file {root}/htpasswd;
            }
        }
        """
    }

    /// A bad file is given up quickly here: two failures on its own, a short back-off.
    static let isolation = [
        "ERRORBUSD_BUS_ISOLATION_MAX_ATTEMPTS": "2",
        "ERRORBUSD_BUS_ISOLATION_BACKOFF_BASE": "0.2s",
        "ERRORBUSD_BUS_ISOLATION_BACKOFF_CAP": "0.5s",
        // A request that never gets an answer gives up after a second.
        "ERRORBUSD_API_REQUEST_TIMEOUT": "1s",
    ]

    static func daemon(in scratch: borrowing ScratchDirectory, _ nginx: NginxProcess, environment: [String: String] = isolation) throws -> DaemonProcess {
        try DaemonProcess(
            in: scratch,
            baseURL: nginx.baseURL,
            api: ForeignServerIntegrationTests.webDAVContract(nginx),
            auth: ForeignServerIntegrationTests.basicAuth,
            credentials: ["password": "right horse\n"],
            environment: environment
        )
    }

    static func good(_ number: Int) -> (name: String, content: Data) {
        ("good-\(number).txt", Data("good file \(number)\n".utf8))
    }

    /// Drops good files one every 100 ms, as a host whose files keep arriving, from `first` until
    /// the task is cancelled (at most 600); returns how many it dropped.
    static func drip(_ daemon: DaemonProcess, from first: Int = 0) -> Task<Int, any Error> {
        Task {
            var number = first
            while !Task.isCancelled, number < first + 600 {
                try daemon.drop(good(number).name, content: good(number).content)
                number += 1
                try? await Task.sleep(for: .milliseconds(100))
            }
            return number - first
        }
    }

    /// Expects every good file from `first` on of `count` stored by nginx.
    static func expectStored(_ nginx: NginxProcess, _ count: Int, from first: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) {
        for number in first..<(first + count) {
            let stored = FileManager.default.contents(atPath: nginx.directory + "/html/dav/incoming/" + good(number).name)
            #expect(stored == good(number).content, "\(good(number).name)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: Poison.allCases)
    func oneFileTheAPIRefusesIsSetAsideAndTheOthersAreDelivered(_ poison: Poison) async throws {
        let scratch = try ScratchDirectory("poison")
        let blackhole = try Blackhole()
        defer { blackhole.close() }
        let nginx = try NginxProcess(in: scratch, servers: Self.server(poison, blackhole: blackhole.port))
        try await NginxProcess.htpasswd(user: "errorbus", password: "right horse").write(toFile: nginx.directory + "/htpasswd", atomically: true, encoding: .utf8)
        try await nginx.start()
        let daemon = try Self.daemon(in: scratch, nginx)
        try await ForeignServerIntegrationTests.run(daemon, stopping: [nginx]) {
            try daemon.drop("poison.bin", content: Data("the file this API refuses\n".utf8))
            try await daemon.waitForLog("incident 1 opened: ")
            // Good files keep arriving after it, and go: not held behind it. Its failures while
            // they are delivered single it out: it is retried alone, and set aside with its cause.
            let drip = Self.drip(daemon)
            try await daemon.waitForLog("poison.bin fails while other sync jobs at \(nginx.baseURL) succeed")
            try await daemon.waitForLog("poison.bin set aside as a dead letter")
            drip.cancel()
            let dropped = try await drip.value
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0 == ["poison.bin"] }
            Self.expectStored(nginx, dropped)
            let dead = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listDeadLetters, .init(incident: nil)) }
            #expect(dead.jobs.map(\.file) == ["poison.bin"])
            let reason = try #require(dead.jobs.first?.reason)
            #expect(reason.hasPrefix("Given up: poison.bin failed 2 times on its own while other sync jobs"), "\(reason)")
            #expect(reason.contains(poison.cause), "\(reason)")
            // Its file stays, for an operator to retry or discard.
            #expect(try daemon.outboxFiles() == ["poison.bin"])

            // Health says what is wrong.
            let health = try await ControlIntegrationTests.ctl(daemon, "health")
            #expect(health.status == 1, "\(health.standardOutput)")
            #expect(health.standardOutput.contains("1 dead letter waits for an operator"), "\(health.standardOutput)")
            let status = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
            #expect(status.services.first { $0.name == "sync" }?.state == .running)
        }
    }

    /// nginx balancing round-robin over three WebDAV backends, one of which answers every `PUT`
    /// with `502`: a third of the uploads fail, whatever their file. That is the API's failure,
    /// not any file's, and the API still serves: one incident that paces, never one canary at a
    /// time for everyone, no file set aside, every file delivered.
    static func balancer(backends: [Int], bad: Int) -> String {
        let good = """
            server {
                listen 127.0.0.1:{backend};
                location /dav/ {
                    root {root}/html;
                    dav_methods PUT;
                    create_full_put_path on;
                }
            }
            """
        let failing = """
            server {
                listen 127.0.0.1:\(bad);
                location /dav/ { return 502; }
            }
            """
        return """
            upstream webdav {
            \((backends + [bad]).map { "    server 127.0.0.1:\($0);" }.joined(separator: "\n"))
            }
            server {
                listen 127.0.0.1:{port};
                location = /healthz { return 204; }
                location /dav/ {
                    auth_basic "errorbus";
                    auth_basic_user_file {root}/htpasswd;
                    proxy_pass http://webdav;
                    proxy_next_upstream off;
                }
            }
            \(backends.map { good.replacing("{backend}", with: String($0)) }.joined(separator: "\n"))
            \(failing)
            """
    }

    @Test func oneBadBackendOfThreeIsOneIncidentThatPacesAndEveryFileGoes() async throws {
        let scratch = try ScratchDirectory("balancer")
        let nginx = try NginxProcess(
            in: scratch,
            servers: Self.balancer(backends: [try NginxProcess.freePort(), try NginxProcess.freePort()], bad: try NginxProcess.freePort())
        )
        try await NginxProcess.htpasswd(user: "errorbus", password: "right horse").write(toFile: nginx.directory + "/htpasswd", atomically: true, encoding: .utf8)
        try await nginx.start()
        // Today's defaults: a file is set aside after five failures on its own, and an incident
        // whose cause is gone settles for 10 s before it closes (the test daemon's is 0).
        let daemon = try Self.daemon(in: scratch, nginx, environment: ["ERRORBUSD_BUS_SETTLE_WINDOW": "10s"])
        try await ForeignServerIntegrationTests.run(daemon, stopping: [nginx]) {
            // 200 files dropped at 20 a second, as the host's producers write them.
            for number in 0..<200 {
                try daemon.drop(Self.good(number).name, content: Self.good(number).content)
                try await Task.sleep(for: .milliseconds(50))
            }
            try await daemon.waitForLog("incident 1 opened: ")
            // Each refused file goes again after a short back-off of its own, and lands on a good
            // backend within a few tries: all of them, well within the suite's time limit (held
            // behind one canary at a time, they took minutes).
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            Self.expectStored(nginx, 200)
            let log = daemon.log
            #expect(log.contains("incident 1 opened: API server error"), "\(log.suffix(3_000))")
            #expect(log.contains("serves others meanwhile: nothing is held back"), "\(log.suffix(3_000))")
            #expect(!log.contains("incident 2 opened"), "one incident for one cause")
            #expect(!log.contains("fails while other"), "no file set aside")
            let dead = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listDeadLetters, .init(incident: nil)) }
            #expect(dead.jobs.isEmpty)
        }
    }

    @Test func aRestartInTheMiddleLosesNothingAndTheBadFileStillEndsAside() async throws {
        let scratch = try ScratchDirectory("poison-restart")
        let nginx = try NginxProcess(in: scratch, servers: Self.server(.serverError, blackhole: 0))
        try await NginxProcess.htpasswd(user: "errorbus", password: "right horse").write(toFile: nginx.directory + "/htpasswd", atomically: true, encoding: .utf8)
        try await nginx.start()
        var environment = Self.isolation
        // Slow enough to be caught between its retries.
        environment["ERRORBUSD_BUS_ISOLATION_BACKOFF_BASE"] = "30s"
        environment["ERRORBUSD_BUS_ISOLATION_BACKOFF_CAP"] = "30s"
        environment["ERRORBUSD_BUS_ISOLATION_MAX_ATTEMPTS"] = "3"
        let daemon = try Self.daemon(in: scratch, nginx, environment: environment)
        do {
            try await daemon.start()
            try daemon.drop("poison.bin", content: Data("the file this API refuses\n".utf8))
            try await daemon.waitForLog("incident 1 opened: ")
            let drip = Self.drip(daemon)
            try await daemon.waitForLog("poison.bin fails while other sync jobs")
            // The store keeps that it fails on its own.
            let store = try DaemonIntegrationTests.store(of: daemon)
            while try (store.jobs(.inFlight) + store.jobs(.parked)).first(where: { $0.fileName == "poison.bin" })?.ownFailures ?? 0 == 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
            drip.cancel()
            let dropped = try await drip.value
            _ = try await daemon.kill()

            // Files keep arriving while it is down; the next start finds everything, and sets the
            // bad file aside at its first failure (no incident of the API's: two more failures on
            // its own, while the good files go, give it up).
            for number in dropped..<(dropped + 5) { try daemon.drop(Self.good(number).name, content: Self.good(number).content) }
            var restarted = environment
            restarted["ERRORBUSD_BUS_ISOLATION_BACKOFF_BASE"] = "0.2s"
            restarted["ERRORBUSD_BUS_ISOLATION_BACKOFF_CAP"] = "0.5s"
            let again = try Self.daemon(in: scratch, nginx, environment: restarted)
            try await ForeignServerIntegrationTests.run(again, stopping: [nginx]) {
                let more = Self.drip(again, from: dropped + 5)
                try await again.waitForLog("poison.bin set aside as a dead letter")
                more.cancel()
                let after = try await more.value
                try await DirectoryWatcher.wait(for: again.outbox) { $0 == ["poison.bin"] }
                Self.expectStored(nginx, dropped + 5 + after)
                #expect(!again.log.contains("opened: API server error"), "the bad file was not taken for the API's failure again")
                let dead = try await ControlIntegrationTests.varlink(again) { try await $0.call(Control.listDeadLetters, .init(incident: nil)) }
                #expect(dead.jobs.map(\.file) == ["poison.bin"])
                #expect(try again.outboxFiles() == ["poison.bin"])
            }
        } catch {
            _ = try? await daemon.kill()
            await nginx.stop()
            throw error
        }
    }

    /// A full backlog with `drop-oldest` sheds the file held for its own failure before the good
    /// files that merely wait behind it, and the dead letters' retention gives up only what was
    /// tried: a file set aside for room before it was ever sent keeps its file.
    @Test func dropOldestShedsTheBadFileFirstAndPrunesNothingNeverTried() async throws {
        let scratch = try ScratchDirectory("poison-drop-oldest")
        let nginx = try NginxProcess(in: scratch, servers: Self.server(.serverError, blackhole: 0))
        try await NginxProcess.htpasswd(user: "errorbus", password: "right horse").write(toFile: nginx.directory + "/htpasswd", atomically: true, encoding: .utf8)
        try await nginx.start()
        var environment = Self.isolation
        environment["ERRORBUSD_SYNC_BACKLOG_MAX_FILES"] = "3"
        environment["ERRORBUSD_SYNC_BACKLOG_OVERFLOW"] = "drop-oldest"
        environment["ERRORBUSD_SYNC_DEAD_LETTERS_MAX_COUNT"] = "1"
        // The incident's canary waits while the test looks.
        environment["ERRORBUSD_BUS_BACKOFF_BASE"] = "10s"
        environment["ERRORBUSD_BUS_BACKOFF_CAP"] = "10s"
        let daemon = try Self.daemon(in: scratch, nginx, environment: environment)
        try await ForeignServerIntegrationTests.run(daemon, stopping: [nginx]) {
            try daemon.drop("poison.bin", content: Data("the file this API refuses\n".utf8))
            try await daemon.waitForLog("incident 1 opened: ")
            // Two good files wait behind its incident, the bad one after them in the incident's
            // order; the backlog is full.
            for number in 0..<2 {
                try daemon.drop(Self.good(number).name, content: Self.good(number).content)
                // Parked behind the bad file, which its run parked first.
                try await daemon.waitForParked(number + 2, under: 1)
            }
            // Two more: room must be made for two. The bad file goes first, then the oldest good one.
            for number in 2..<4 { try daemon.drop(Self.good(number).name, content: Self.good(number).content) }
            try await daemon.waitForLog("poison.bin set aside as a dead letter: Dropped to make room")
            try await daemon.waitForLog("good-0.txt set aside as a dead letter: Dropped to make room")
            // Over sync.dead-letters.max-count (1): only the bad file, which was sent, is given up
            // and its file removed; the good one set aside before it was ever sent stays.
            try await daemon.waitForLog("Dead letters given up")
            try await DirectoryWatcher.wait(for: daemon.outbox) { !$0.contains("poison.bin") }
            let dead = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listDeadLetters, .init(incident: nil)) }
            #expect(dead.jobs.map(\.file) == ["good-0.txt"], "\(dead.jobs.map(\.file))")
            #expect(dead.jobs.allSatisfy { $0.attempts == 0 })
            // The canary, then the rest: what was not set aside is delivered.
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0 == ["good-0.txt"] }
            for number in 1..<4 {
                #expect(FileManager.default.contents(atPath: nginx.directory + "/html/dav/incoming/" + Self.good(number).name) == Self.good(number).content)
            }
        }
    }

    /// A resource the API fails to serve holds no upload; a resource on another port of the
    /// API's host that is rate-limited holds nothing of the API's.
    /// An operator discards the job being tried as its incident's canary: refused before ("is
    /// inFlight"), it now stops when its upload ends.
    @Test func aJobDiscardedWhileItsUploadRunsStopsWhenTheUploadEnds() async throws {
        let scratch = try ScratchDirectory("discard-running")
        let blackhole = try Blackhole()
        defer { blackhole.close() }
        let nginx = try NginxProcess(in: scratch, servers: Self.server(.noAnswer, blackhole: blackhole.port))
        try await NginxProcess.htpasswd(user: "errorbus", password: "right horse").write(toFile: nginx.directory + "/htpasswd", atomically: true, encoding: .utf8)
        try await nginx.start()
        // Each try hangs for 3 s: time for the operator to act while it runs.
        var environment = Self.isolation
        environment["ERRORBUSD_API_REQUEST_TIMEOUT"] = "3s"
        let daemon = try Self.daemon(in: scratch, nginx, environment: environment)
        try await ForeignServerIntegrationTests.run(daemon, stopping: [nginx]) {
            let content = Data("the file this API never answers\n".utf8)
            try daemon.drop("poison.bin", content: content)
            try await daemon.waitForLog("incident 1 opened: ")
            // Keyed by content and name (the WebDAV contract tells files by name): its one row, in
            // flight or parked under the incident, read before the canary is looked for, so that
            // only the discard comes between seeing the canary and acting on it.
            let stored = try DaemonIntegrationTests.store(of: daemon)
            let id = String(try #require((try stored.jobs(.inFlight) + stored.jobs(.parked)).first?.id).prefix(12))
            // No event says a canary started: the incident's state does, while it runs.
            while try await ControlIntegrationTests.varlink(daemon, { try await $0.call(Control.getIncident, .init(id: 1)) }).incident.state != "canary" {
                try await Task.sleep(for: .milliseconds(20))
            }
            let discarded = try await ControlIntegrationTests.ctl(daemon, "discard", "--job", id)
            #expect(discarded.status == 0, "\(discarded.standardError)")
            #expect(discarded.standardOutput.contains("discarded: 1 (being uploaded: it stops when its upload ends"), "\(discarded.standardOutput)")
            // Its upload times out; it is given up, not tried again, and its incident, left with
            // nothing to try, ends as the operator's doing. (Which timeout ends it, the request's
            // deadline or the read's, decides whether that is incident 1, or a second one that
            // cause opened: a loaded host's timing.)
            try await daemon.waitForLog("discarded by an operator after")
            let store = try DaemonIntegrationTests.store(of: daemon)
            #expect(try store.jobs(.discarded).map(\.fileName) == ["poison.bin"])
            #expect(try store.jobs(.inFlight).isEmpty)
        }
    }

    @Test func aFailingResourceAndAnotherServersRateLimitHoldNoUpload() async throws {
        let scratch = try ScratchDirectory("poison-resources")
        let sandbox = try await SandboxProcess(in: scratch)
        let other = try NginxProcess(
            in: scratch,
            name: "other",
            servers: """
                server {
                    listen 127.0.0.1:{port};
                    location = /flags.json { add_header Retry-After 60 always; return 429; }
                }
                """
        )
        try await other.start()
        let daemon = try DaemonProcess(
            in: scratch,
            baseURL: sandbox.baseURL,
            credentials: ["client-secret": sandbox.clientSecret],
            resources: ["settings=1s", "\(other.baseURL)/flags.json=1s"]
        )
        do {
            try await sandbox.fault(#"{"route":"resources","mode":"status","status":500}"#)
            try await daemon.start()
            try await daemon.waitForLog("opened: API server error")
            try await daemon.waitForLog("opened: API rate limit reached")
            for number in 0..<5 { try daemon.drop("item-\(number).bin", content: DaemonIntegrationTests.content(number)) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let expected = Set((0..<5).map { DaemonIntegrationTests.key(of: DaemonIntegrationTests.content($0)) })
            #expect(Set(try await sandbox.items().keys) == expected)

            let status = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
            #expect(status.services.first { $0.name == "sync" }?.state == .running, "\(status.services)")
            #expect(status.services.first { $0.name == "loader" }?.state == .held)
            let scopes = Set(status.incidents.map(\.scope))
            #expect(scopes == [sandbox.baseURL, other.baseURL], "each server is its own scope: \(scopes)")
            #expect(status.incidents.allSatisfy { $0.service == "loader" })
            try await daemon.stop().expectClean()
        } catch {
            _ = try? await daemon.kill()
            await other.stop()
            try? await sandbox.stop()
            throw error
        }
        await other.stop()
        try await sandbox.stop()
    }
}

extension ChildProcess.Finished {
    /// Expects exit status 0.
    func expectClean(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status == 0, "exited with \(status):\n\(standardError)", sourceLocation: sourceLocation)
    }
}

/// A loopback port that accepts connections (the kernel completes them into its backlog) and
/// never answers: a server whose answer never comes.
final class Blackhole: Sendable {
    let port: Int
    private let descriptor: CInt

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ChildProcessError(description: "socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound, listen(descriptor, 64) == 0 else {
            Glibc.close(descriptor)
            throw ChildProcessError(description: "bind or listen failed: errno \(errno)")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        Glibc.close(descriptor)
    }
}
