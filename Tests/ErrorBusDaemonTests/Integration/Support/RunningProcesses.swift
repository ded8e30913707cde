import AsyncHTTPClient
import Foundation
import Glibc
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1
@testable import Sandbox
import TestSupport
import Testing

/// Where `swift build --build-tests` put the executables: next to the test bundle.
enum Binaries {
    static func path(_ name: String) -> String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent()
            .appendingPathComponent(name).path
    }
}

/// A scratch directory removed when the test ends.
struct ScratchDirectory: ~Copyable {
    let path: String

    init(_ label: String) throws {
        var template = Array("/tmp/errorbus-\(label)-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw ChildProcessError(description: "mkdtemp failed: errno \(errno)") }
        path = String(cString: created)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The real `errorbus-sandbox`, as a process on an ephemeral loopback port.
final class SandboxProcess: Sendable {
    let process: ChildProcess
    let port: Int
    let clientSecret: String
    let http: HTTPClient

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts the sandbox and waits for its "listening" line (no polling).
    init(in scratch: borrowing ScratchDirectory, clientSecret: String = "sandbox-test-secret") async throws {
        let secretFile = scratch.file("sandbox-secret")
        try Data((clientSecret + "\n").utf8).write(to: URL(fileURLWithPath: secretFile))
        let portFile = scratch.file("sandbox-port")
        process = try ChildProcess(
            Binaries.path("errorbus-sandbox"),
            ["--port-file", portFile, "--client-secret-file", secretFile, "--log-level", "debug"]
        )
        guard await process.waitForStandardError(containing: "errorbus-sandbox listening") else {
            throw ChildProcessError(description: "the sandbox exited: \(process.standardError.text)")
        }
        let text = try String(contentsOfFile: portFile, encoding: .utf8)
        port = try #require(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        self.clientSecret = clientSecret
        http = HTTPClient(eventLoopGroupProvider: .singleton)
    }

    /// Sets a fault (the admin API's JSON).
    func fault(_ json: String) async throws {
        try await admin(.POST, "faults", json)
    }

    /// Gives the API a capacity (the admin API's JSON).
    func capacity(_ json: String) async throws {
        try await admin(.PUT, "capacity", json)
    }

    /// Sends JSON to the admin API; an answer of 300 or more is an error.
    private func admin(_ method: HTTPMethod, _ path: String, _ json: String) async throws {
        var request = HTTPClientRequest(url: baseURL + "/admin/" + path)
        request.method = method
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await http.execute(request, timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code < 300 else {
            throw ChildProcessError(description: "\(path) \(json) refused: \(response.status) \(String(buffer: body))")
        }
    }

    /// Forgets every stored item, counter and fault (`POST /admin/reset`): what the API's
    /// consumers took is gone from it.
    func reset() async throws {
        try await admin(.POST, "reset", "{}")
    }

    /// Clears every fault.
    func clearFaults() async throws {
        var request = HTTPClientRequest(url: baseURL + "/admin/faults")
        request.method = .DELETE
        _ = try await http.execute(request, timeout: .seconds(5))
    }

    /// What the sandbox received.
    func stats() async throws -> StatsReport {
        let response = try await http.execute(HTTPClientRequest(url: baseURL + "/admin/stats"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 16 << 20)
        return try JSONDecoder().decode(StatsReport.self, from: Data(buffer: body))
    }

    /// The items the sandbox stores, by id.
    func items() async throws -> [String: ItemsAnswer.Item] {
        let response = try await http.execute(HTTPClientRequest(url: baseURL + "/admin/items"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 64 << 20)
        let answer = try JSONDecoder().decode(ItemsAnswer.self, from: Data(buffer: body))
        return Dictionary(answer.items.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    struct ItemsAnswer: Decodable {
        struct Item: Decodable {
            let id: String
            let bytes: Int
            let sha256: String
            /// How many uploads stored a new version of it.
            let versions: Int
        }

        let items: [Item]
    }

    func stop() async throws {
        process.terminate()
        _ = await process.waitForExit()
        try await http.shutdown()
    }
}

/// The real `errorbusd`, as a process with its own outbox, state and configuration.
final class DaemonProcess: Sendable {
    let root: String
    let configurationFile: String
    let outbox: String
    let stateDirectory: String
    let resources: String
    /// The control socket (`control.socket-path`), in the scratch directory itself.
    let controlSocket: String
    let environment: [String: String]
    private let process: Mutex<ChildProcess?>

    /// Lays out a daemon's directories and configuration for the sandbox (`extra` is appended to
    /// the YAML). `environment` is added to the process's (e.g. `NOTIFY_SOCKET`).
    convenience init(in scratch: borrowing ScratchDirectory, sandbox: SandboxProcess, extra: String = "", environment added: [String: String] = [:]) throws {
        try self.init(in: scratch, baseURL: sandbox.baseURL, credentials: ["client-secret": sandbox.clientSecret], extra: extra, environment: added)
    }

    /// Lays out a daemon's directories and configuration for the API at `baseURL`: `api` and
    /// `auth` are lines under those sections (indented by two spaces), `extra` is appended to the
    /// YAML, `credentials` are the files of its `$CREDENTIALS_DIRECTORY`.
    convenience init(
        in scratch: borrowing ScratchDirectory,
        baseURL: String,
        api: String = "",
        auth: String = "  client-id: errorbus",
        credentials: [String: String],
        resources remote: [String] = [],
        extra: String = "",
        environment added: [String: String] = [:]
    ) throws {
        try self.init(
            directory: scratch.path, baseURL: baseURL, api: api, auth: auth, credentials: credentials, resources: remote, extra: extra, environment: added
        )
    }

    /// As `init(in:baseURL:…)`, in `directory` (one of several daemons of a scratch directory).
    init(
        directory: String,
        baseURL: String,
        api: String = "",
        auth: String = "  client-id: errorbus",
        credentials: [String: String],
        resources remote: [String] = [],
        extra: String = "",
        environment added: [String: String] = [:]
    ) throws {
        root = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func file(_ name: String) -> String { directory + "/" + name }
        outbox = file("outbox")
        stateDirectory = file("state")
        resources = file("resources")
        controlSocket = file("control.socket")
        let credentialsDirectory = file("credentials")
        for directory in [outbox, stateDirectory, resources, credentialsDirectory] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        for (name, content) in credentials {
            try Data(content.utf8).write(to: URL(fileURLWithPath: credentialsDirectory + "/" + name))
        }
        configurationFile = file("errorbusd.yaml")
        try Self.configuration(
            baseURL: baseURL, api: api, auth: auth, outbox: outbox, state: stateDirectory, resources: resources, remote: remote,
            control: controlSocket, extra: extra
        ).write(toFile: configurationFile, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ERRORBUSD_") }
        environment["CREDENTIALS_DIRECTORY"] = credentialsDirectory
        environment.removeValue(forKey: "STATE_DIRECTORY")
        environment.removeValue(forKey: "RUNTIME_DIRECTORY")
        environment.removeValue(forKey: "NOTIFY_SOCKET")
        environment.removeValue(forKey: "WATCHDOG_USEC")
        environment.removeValue(forKey: "JOURNAL_STREAM")
        environment.merge(added) { $1 }
        self.environment = environment
        process = Mutex(nil)
    }

    static func configuration(
        baseURL: String, api: String, auth: String, outbox: String, state: String, resources: String, remote: [String] = [], control: String,
        extra: String
    ) -> String {
        """
        api:
          base-url: \(baseURL)
          request-timeout: 5s
          connect-timeout: 2s
        \(api)
        auth:
        \(auth)
        sync:
          outbox: \(outbox)
          concurrency: 8
          rescan-interval: 1s
          settle-time: 0.2s
        loader:
          directory: \(resources)
          resources: [\(remote.joined(separator: ", "))]
        state:
          directory: \(state)
        shutdown:
          drain-timeout: 5s
        log:
          level: debug
        bus:
          reachability:
            initial-interval: 0.2s
            maximum-interval: 1s
          backoff:
            base: 0.2s
            cap: 1s
          release:
            spread: 1ms
          # An incident resolves as soon as its jobs are released, as the tests expect.
          settle-window: 0s
        control:
          socket-path: \(control)
        \(extra)
        """
    }

    /// The running process.
    var current: ChildProcess {
        get throws {
            guard let process = process.withLock({ $0 }) else { throw ChildProcessError(description: "errorbusd is not running") }
            return process
        }
    }

    /// Starts errorbusd without waiting for anything; `prefix` runs it through another command
    /// (`nsenter …`), which must end by executing the rest of its arguments.
    @discardableResult
    func launch(prefix: [String] = []) throws -> ChildProcess {
        let command = prefix + [Binaries.path("errorbusd"), "--config", configurationFile]
        let child = try ChildProcess(command[0], Array(command.dropFirst()), environment: environment)
        process.withLock { $0 = child }
        return child
    }

    /// Starts errorbusd and waits for its "ready" line.
    func start() async throws {
        let child = try launch()
        guard await child.waitForStandardError(containing: "errorbusd ready") else {
            throw ChildProcessError(description: "errorbusd exited before it was ready:\n\(child.standardError.text)")
        }
    }

    /// Waits until errorbusd's log contains `needle` at least `count` times.
    func waitForLog(_ needle: String, count: Int = 1, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let child = try current
        guard await child.standardError.wait(for: needle, count: count) else {
            Issue.record("errorbusd ended before logging \"\(needle)\" \(count) times:\n\(child.standardError.text)", sourceLocation: sourceLocation)
            throw ChildProcessError(description: "errorbusd ended")
        }
    }

    /// Waits until errorbusd's log says it parked at least `count` jobs under `incident`
    /// (``ParkingLog``; `nil`: under any): one at a time as their runs met it, or the queue it
    /// held back at once.
    func waitForParked(_ count: Int, under incident: Int?, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let child = try current
        guard await child.standardError.wait(until: { ParkingLog.parked(in: $0, under: incident) >= count }) else {
            Issue.record("errorbusd ended before parking \(count) jobs under incident \(incident.map { "\($0)" } ?? "any"):\n\(child.standardError.text)", sourceLocation: sourceLocation)
            throw ChildProcessError(description: "errorbusd ended")
        }
    }

    /// Drops a file into the outbox the way a well-behaved writer does: written under a hidden
    /// name, then renamed into place.
    @discardableResult
    func drop(_ name: String, content: Data) throws -> String {
        let hidden = outbox + "/." + name + ".part"
        try content.write(to: URL(fileURLWithPath: hidden))
        guard rename(hidden, outbox + "/" + name) == 0 else { throw ChildProcessError(description: "rename failed: errno \(errno)") }
        return name
    }

    /// Files still in the outbox (not hidden).
    func outboxFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: outbox).filter { !$0.hasPrefix(".") }.sorted()
    }

    func signal(_ signal: CInt) throws {
        try current.signal(signal)
    }

    /// Sends SIGTERM and waits for the exit.
    func stop() async throws -> ChildProcess.Finished {
        let child = try current
        child.terminate()
        return await child.waitForExit()
    }

    /// SIGKILL: no chance to clean up.
    func kill() async throws -> ChildProcess.Finished {
        let child = try current
        child.signal(SIGKILL)
        return await child.waitForExit()
    }

    /// Everything errorbusd logged so far.
    var log: String {
        (try? current.standardError.text) ?? ""
    }
}

import Synchronization
