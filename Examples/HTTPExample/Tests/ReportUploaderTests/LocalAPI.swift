import ErrorBusTesting
import Synchronization

/// The report API of ``ReportAPI`` as the tests script it, served over real HTTP on 127.0.0.1 by
/// ErrorBusTesting's `LoopbackHTTPServer`.
enum LocalAPI {
    /// `GET /healthz` answers `204`; each `PUT` of a report takes the next of `answers`, and once
    /// they are used up, `201` with the report's receipt.
    static func reports(
        answering answers: [LoopbackHTTPServer.Response] = []
    ) -> @Sendable (LoopbackHTTPServer.Request) async -> LoopbackHTTPServer.Response {
        let script = Mutex(answers[...])
        return { request in
            if request.method == "GET", request.path == "/healthz" { return .init(status: 204) }
            guard request.method == "PUT", request.path.hasPrefix("/v1/reports/") else { return .init(status: 404) }
            if let scripted = script.withLock({ $0.popFirst() }) { return scripted }
            let id = request.path.dropFirst("/v1/reports/".count)
            return .init(status: 201, headers: [("Content-Type", "application/json")], body: #"{"id":"\#(id)"}"#)
        }
    }
}
