/// One failure as the bus sees it: categorised, scoped, explained.
public struct Failure: Sendable {
    /// Which policy the bus runs for it.
    public var category: ErrorCategory {
        didSet {
            if category.kind != fingerprint.kind {
                fingerprint = Self.fingerprint(scope: scope, kind: category.kind, cause: cause, service: service, job: fingerprint.job)
            }
        }
    }
    /// What makes it the same incident as other failures: scope, category and cause.
    public private(set) var fingerprint: Fingerprint
    /// Where it applies (see ``Fingerprint/scope``).
    public var scope: String {
        get { fingerprint.scope }
        set { fingerprint = Self.fingerprint(scope: newValue, kind: category.kind, cause: cause, service: service, job: fingerprint.job) }
    }
    /// A short, stable code for what went wrong.
    public var cause: String {
        get { fingerprint.cause }
        set { fingerprint = Self.fingerprint(scope: scope, kind: category.kind, cause: newValue, service: service, job: fingerprint.job) }
    }
    /// The service that met the failure.
    public var service: String {
        didSet {
            if service != oldValue {
                fingerprint = Self.fingerprint(scope: scope, kind: category.kind, cause: cause, service: service, job: fingerprint.job)
            }
        }
    }
    /// The error as it was thrown, for logs.
    public var error: (any Error)?

    private var explanation: Explanation

    private enum Explanation: Sendable {
        case fixed(OperatorText)
        /// Kept unevaluated: most failures join an open incident and are never shown to anyone.
        case deferred(any CategorizedError)
    }

    /// A failure with explicit operator text.
    public init(
        category: ErrorCategory,
        scope: String,
        cause: String,
        service: String,
        text: OperatorText,
        error: (any Error)? = nil
    ) {
        self.category = category
        self.fingerprint = Self.fingerprint(scope: scope, kind: category.kind, cause: cause, service: service, job: nil)
        self.service = service
        self.error = error
        self.explanation = .fixed(text)
    }

    /// The failure a categorised error describes, for a job.
    public init(_ error: some CategorizedError, job: Job) {
        let category = error.category
        self.category = category
        self.fingerprint = Self.fingerprint(
            scope: error.scope ?? job.defaultScope(for: category.kind),
            kind: category.kind,
            cause: error.cause,
            service: job.service,
            job: nil
        )
        self.service = job.service
        self.error = error
        self.explanation = .deferred(error)
    }

    /// What an operator reads about it; `next` is filled in from the category when the error had
    /// nothing to say about it.
    public var text: OperatorText {
        var text: OperatorText
        switch explanation {
        case .fixed(let fixed): text = fixed
        case .deferred(let error): text = error.operatorText
        }
        if text.next == nil { text.next = category.kind.defaultNextStep }
        return text
    }

    /// The same failure with `job` in its fingerprint, so that it makes an incident of its own
    /// (``ErrorBusConfiguration/Grouping/perJob``).
    func belonging(to job: Job) -> Failure {
        var failure = self
        failure.fingerprint = Self.fingerprint(scope: scope, kind: category.kind, cause: cause, service: service, job: job.description)
        return failure
    }

    /// The fingerprint of a failure: the service takes part for the kinds that concern one
    /// service's work at its scope.
    private static func fingerprint(scope: String, kind: ErrorCategory.Kind, cause: String, service: String, job: String?) -> Fingerprint {
        Fingerprint(scope: scope, kind: kind, cause: cause, service: kind.scopeKind == .serviceAtHost ? service : nil, job: job)
    }

    /// Replaces the operator text, e.g. in a responder that knows better.
    public mutating func explain(_ text: OperatorText) {
        explanation = .fixed(text)
    }
}

extension Failure: CustomStringConvertible {
    public var description: String { "\(category) at \(scope) (\(cause)) in \(service)" }
}
