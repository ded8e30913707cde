public import ErrorBus

/// A failed HTTP exchange with the remote API, categorised for an `ErrorBus`.
///
/// A service never hands the bus a raw status code or a SwiftNIO error: it throws one of
/// these, made by one of the classification entry points —
///
/// - ``init(classifying:method:url:)`` for an error AsyncHTTPClient or SwiftNIO threw (DNS,
///   refused, reset, timeouts, TLS, …),
/// - ``init(status:headers:body:method:url:now:)`` for an answer with an unexpected status,
/// - ``undecodable(method:url:status:contentType:body:expected:error:)`` for an answer whose
///   body is not what was expected, and ``bodyTooLarge(method:url:status:limit:announced:)`` for one
///   that is bigger than allowed.
///
/// Each carries a short, stable ``cause`` (`connectionRefused`, `http503`, …) that takes part in
/// the incident fingerprint, and ``operatorText`` an operator can act on. The underlying error is
/// kept in ``underlying`` for logs only.
public struct HTTPFailure: CategorizedError, Sendable {
    /// Which policy the bus runs for this failure.
    public var category: ErrorCategory
    /// A short, stable code for what went wrong, e.g. `"connectionRefused"` or `"http503"`.
    public var cause: String
    /// The request's host, lowercased, without port.
    public var host: String
    /// The request's origin (scheme, host and port, ``RequestTarget/origin``): what network
    /// failures are grouped by.
    public var origin: String
    /// The request method, e.g. `"PUT"`.
    public var method: String
    /// The request URL.
    public var url: String
    /// What an operator reads about this failure.
    public var operatorText: OperatorText
    /// The status code the server answered, when it answered.
    public var status: Int?
    /// How long the server asked us to wait (`Retry-After`), when it did.
    public var retryAfter: Duration?
    /// The RFC 9457 problem the server answered with, when it did.
    public var problem: ProblemDetails?
    /// The error as it was thrown (AsyncHTTPClient, SwiftNIO, a decoder), for logs.
    public var underlying: (any Error)?

    /// The scope the bus groups this failure by.
    ///
    /// The request's ``origin`` for the network categories (`unreachable`, `transient`,
    /// `rateLimited`) and `invalid`, so ten thousand uploads failing against one server are one
    /// incident (and a server on another port of the same host is another scope). `nil` for `unauthenticated` (the bus then uses the job's auth realm: the single
    /// re-authentication is per realm, not per host) and for `fatal` (the job's service: a local
    /// misconfiguration pauses the service, whatever host it talks to).
    public var scope: String? {
        // The host for the kinds whose scope is one; the bus takes the job's realm or service.
        switch category.kind.scopeKind {
        case .host, .serviceAtHost: origin
        case .realm, .service: nil
        }
    }

    /// A failure with every field given; the classification entry points are usually what you
    /// want.
    public init(
        category: ErrorCategory,
        cause: String,
        method: String,
        url: String,
        text: OperatorText,
        status: Int? = nil,
        retryAfter: Duration? = nil,
        problem: ProblemDetails? = nil,
        underlying: (any Error)? = nil
    ) {
        self.category = category
        self.cause = cause
        self.method = method
        self.url = url
        let target = RequestTarget(url: url)
        self.host = target.host
        self.origin = target.origin
        self.operatorText = text
        self.status = status
        self.retryAfter = retryAfter
        self.problem = problem
        self.underlying = underlying
    }

    /// The request in a few words for messages, e.g. `PUT /v1/items/report-1`.
    var request: String { "\(method) \(RequestTarget(url: url).pathAndQuery)" }
}

extension HTTPFailure: CustomStringConvertible {
    /// One log line: category, cause, request and, when there is one, the underlying error.
    public var description: String {
        var line = "HTTPFailure(\(category), \(cause)) \(method) \(url)"
        if let status { line += " status \(status)" }
        if let underlying { line += ": \(String(describing: underlying).prefix(300))" }
        return line
    }
}
