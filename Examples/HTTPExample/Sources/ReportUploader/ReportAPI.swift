import AsyncHTTPClient
public import ErrorBusHTTP
import NIOCore
import NIOHTTP1

/// A report the uploader sends.
public struct Report: Sendable, Hashable, Identifiable {
    /// Unique per report: the API takes a report once, however often it is sent.
    public var id: String
    /// What the report says.
    public var text: String

    public init(id: String, text: String) {
        self.id = id
        self.text = text
    }
}

/// What the API answers a report it took with.
public struct Receipt: Sendable, Hashable, Decodable {
    /// The id of the report it took.
    public var id: String
}

/// The API the reports go to: `PUT /v1/reports/{id}` with the report's text, answered `201
/// Created` and a JSON receipt (`{"id": "…"}`); `GET /healthz` answers `204` while it serves.
public struct ReportAPI: Sendable {
    /// Where it is, e.g. `https://reports.example.net`.
    public var baseURL: String
    /// What this API means by a status that HTTP says otherwise, as an administrator wrote it.
    public var classify: [ClassificationOverride]

    public init(baseURL: String, classify: [ClassificationOverride] = []) {
        self.baseURL = baseURL
        self.classify = classify
    }

    /// The scope of the uploads' jobs: the base URL's origin, as `HTTPFailure.scope` and
    /// `APIProbe` name it, so that the incidents of its failures hold exactly the work sent to it.
    public var origin: String { RequestTarget(url: baseURL).origin }

    /// What the bus's probe asks while the API cannot be reached: `GET /healthz`, `204`.
    public var probe: APIProbe.Configuration { APIProbe.Configuration(baseURL: baseURL, probePath: "/healthz") }

    /// Where a report goes. Report ids are made of letters, digits and `-`, which need no
    /// percent-encoding.
    func url(of report: Report) -> String { baseURL + "/v1/reports/" + report.id }

    // sample: http-upload
    /// Sends one report: the API's receipt, or why not as an `HTTPFailure`, whose category, cause
    /// and scope tell the bus what to do.
    func upload(_ report: Report, with client: HTTPClient) async throws(HTTPFailure) -> Receipt {
        var request = HTTPClientRequest(url: url(of: report))
        request.method = .PUT
        request.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        request.body = .bytes(ByteBuffer(string: report.text))
        // Anything but a 201 throws, classified: refused, DNS, TLS, timeouts and resets; a 429 or
        // 503 and its Retry-After, a 401, a 4xx and its problem details, a 5xx, a redirect; then
        // as the administrator's rules say. One deadline for the answer and its body.
        let answer = try await client.execute(
            request, accepting: [.created], deadline: .now() + .seconds(30), overrides: classify
        )
        // A body that is not a receipt for this report is `invalid` (`undecodableResponse`).
        return try await answer.decodeBody(as: Receipt.self, upTo: 16 * 1024, expected: "a JSON receipt") {
            $0.id == report.id ? nil : "a receipt for \(report.id)"
        }
    }
    // end sample
}
