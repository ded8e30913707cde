/// How the sandbox ended a request: a status code, or a connection reset.
struct RequestOutcome: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The status code; 0 for a reset.
    let code: Int

    /// An HTTP answer with `code`.
    static func status(_ code: Int) -> RequestOutcome { RequestOutcome(code: code) }

    /// The connection was reset instead of answered.
    static let reset = RequestOutcome(code: 0)

    /// `"201"`, `"503"`, … or `"reset"`: the key used in the stats.
    var description: String { code == 0 ? "reset" : String(code) }

    static func < (lhs: RequestOutcome, rhs: RequestOutcome) -> Bool { lhs.code < rhs.code }
}
