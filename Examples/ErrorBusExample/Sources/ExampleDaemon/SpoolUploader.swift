import ErrorBus
import Foundation

/// Sends reports kept in a spool directory, one file per report. The spool is the queue: where a
/// report waits is where its file is, and nothing else says so.
///
///     spool/queued/<id>                  to be sent
///     spool/parked/<incident>/0-<id>     held back behind an incident before it ran
///     spool/parked/<incident>/1-<id>     failed under it
///     spool/sent/<id>, spool/dead/<id>
///
/// The bus decides what becomes of each run and keeps nothing of the report
/// (`ErrorBus.run(_:operation:)`); the spool records each verdict with one rename, which a crash
/// leaves done or not done. The bus asks the spool for a parked report when an incident wants a
/// canary, and tells it when an incident releases its reports (`ParkedJobSource`): however many
/// reports an outage parks, they cost the bus no memory.
actor SpoolUploader: ParkedJobSource {
    /// The service's name on the bus.
    static let service = "spool"

    private let directory: URL
    private let bus: ErrorBus
    private let api: SimulatedAPI
    private let credentials: Credentials

    init(directory: URL, bus: ErrorBus, api: SimulatedAPI, credentials: Credentials) throws {
        self.directory = directory
        self.bus = bus
        self.api = api
        self.credentials = credentials
        for folder in ["queued", "parked", "sent", "dead"] {
            try FileManager.default.createDirectory(at: directory.appending(path: folder), withIntermediateDirectories: true)
        }
    }

    /// Spools a report: written aside, then renamed into the queue whole.
    nonisolated func enqueue(_ report: Report) throws {
        let temporary = directory.appending(path: ".\(report.id)")
        try Data(report.body.utf8).write(to: temporary)
        try FileManager.default.moveItem(at: temporary, to: directory.appending(path: "queued/\(report.id)"))
    }

    /// The ids of the reports in a folder of the spool (`queued`, `sent`, `parked/3`…).
    nonisolated func reports(in folder: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.appending(path: folder).path)) ?? []
        return names.map { folder.hasPrefix("parked") ? String($0.dropFirst(2)) : $0 }.sorted()
    }

    /// Sends every queued report once, side by side, and records what the bus decided of each.
    func sendQueued() async {
        await withDiscardingTaskGroup { group in
            for id in reports(in: "queued") {
                group.addTask { _ = await self.send(id, from: self.directory.appending(path: "queued/\(id)")) }
            }
        }
    }

    // sample: durable-queue
    /// Runs one report through the bus (as an incident's canary, when the bus asked for one) and
    /// moves its file to where the verdict says it waits.
    private func send(_ id: String, from file: URL, as canary: CanaryRun? = nil) async -> Verdict {
        let report = Report(id: id, body: (try? String(contentsOf: file, encoding: .utf8)) ?? "")
        let job = Job(id: id, service: Self.service, scope: api.host, realm: "api")
        let operation: @Sendable () async throws -> Void = { [api, credentials] in
            try await Uploader.upload(report, to: api, with: credentials)
        }
        let verdict = if let canary { await canary.run(job, operation: operation) } else { await bus.run(job, operation: operation) }
        let destination =
            switch verdict {
            case .succeeded: "sent/\(id)"
            case .parked(let incident, let failed): "parked/\(incident)/\(failed ? 1 : 0)-\(id)"
            case .stopped(let stopped) where stopped.reason == .deadLettered: "dead/\(id)"
            // Sent again with the next batch (a queue of its own would keep "not before").
            case .retry, .stopped: "queued/\(id)"
            }
        move(file, to: destination)
        return verdict
    }

    /// The bus wants a canary for `incident`: the first report parked under it, those that
    /// merely wait before those that failed.
    func runOne(parkedUnder incident: IncidentID, as canary: CanaryRun) async -> Verdict? {
        let folder = directory.appending(path: "parked/\(incident)")
        guard let name = (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.min() else { return nil }
        return await send(String(name.dropFirst(2)), from: folder.appending(path: name), as: canary)
    }

    /// `incident`'s cause is gone: its reports go back to the queue, which is sent; the bus lets
    /// the incident settle once they ran.
    func release(_ incident: IncidentID) async {
        for id in reports(in: "parked/\(incident)") {
            let parked = ["0-", "1-"].map { directory.appending(path: "parked/\(incident)/\($0)\(id)") }
            for file in parked where FileManager.default.fileExists(atPath: file.path) {
                move(file, to: "queued/\(id)")
            }
        }
        try? FileManager.default.removeItem(at: directory.appending(path: "parked/\(incident)"))
        await sendQueued()
    }
    // end sample

    private func move(_ file: URL, to destination: String) {
        let target = directory.appending(path: destination)
        try? FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? FileManager.default.moveItem(at: file, to: target)
    }
}
