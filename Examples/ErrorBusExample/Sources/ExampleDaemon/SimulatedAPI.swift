/// A report the uploader sends.
struct Report: Sendable, Hashable, Identifiable {
    /// Unique per report: the API takes a report once, however often it is sent.
    var id: String
    var body: String
}

/// The remote setting the refresher keeps fresh.
struct Setting: Sendable, Hashable, CustomStringConvertible {
    var value: String
    var version: Int

    var description: String { "\(value) (version \(version))" }
}

/// How a request to the API failed: what an HTTP client tells from a transport error or a status
/// code.
enum APIFailure: Error, Hashable {
    /// The connection was refused: the API is down.
    case connectionRefused
    /// `401`: the access token is missing, expired or revoked.
    case unauthorized
    /// `422`: the request is wrong and will fail the same way again.
    case unprocessable(reason: String)
    /// The client secret was refused at sign-in.
    case secretRefused
}

/// A remote HTTP API, simulated in-process.
///
/// This example shows the bus, not HTTP: a real service sends requests (with AsyncHTTPClient,
/// say) and maps transport errors and status codes to the same failures. The scenario and the
/// tests tell it to go down, to come back, or to revoke its tokens.
actor SimulatedAPI {
    /// The API's host: the scope of the jobs that talk to it.
    nonisolated let host: String
    private let secret: String
    private var isUp = true
    private var tokens: Set<String> = []
    private var issuedTokens = 0
    private var setting = Setting(value: "hello", version: 1)
    /// The reports it took, in order.
    private(set) var received: [Report] = []
    /// Requests it was sent (probes and sign-ins included), whether it answered or not.
    private(set) var requests = 0

    init(host: String, secret: String) {
        self.host = host
        self.secret = secret
    }

    /// Refuses every connection until ``comeBack()``.
    func goDown() { isUp = false }

    func comeBack() { isUp = true }

    /// Every token issued so far is refused from now on (`401`).
    func revokeTokens() { tokens.removeAll() }

    /// Publishes a new value of the setting.
    func publish(_ value: String) {
        setting = Setting(value: value, version: setting.version + 1)
    }

    /// `POST /token`: a new access token for the client secret.
    func signIn(secret: String) throws(APIFailure) -> String {
        requests += 1
        guard isUp else { throw .connectionRefused }
        guard secret == self.secret else { throw .secretRefused }
        issuedTokens += 1
        let token = "token-\(issuedTokens)"
        tokens.insert(token)
        return token
    }

    /// `PUT /reports/{id}`: takes a report once; sending it again changes nothing, as an upload
    /// with an idempotency key.
    func upload(_ report: Report, token: String?) throws(APIFailure) {
        try answer(token)
        guard !report.body.isEmpty else { throw .unprocessable(reason: "the report is empty") }
        if !received.contains(where: { $0.id == report.id }) { received.append(report) }
    }

    /// `GET /setting`.
    func fetchSetting(token: String?) throws(APIFailure) -> Setting {
        try answer(token)
        guard !setting.value.isEmpty else { throw .unprocessable(reason: "the setting is empty") }
        return setting
    }

    /// `GET /healthz`: whether the API answers at all; needs no token.
    func healthz() -> Bool {
        requests += 1
        return isUp
    }

    private func answer(_ token: String?) throws(APIFailure) {
        requests += 1
        guard isUp else { throw .connectionRefused }
        guard let token, tokens.contains(token) else { throw .unauthorized }
    }
}
