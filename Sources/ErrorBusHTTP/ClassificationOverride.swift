import ErrorBus

/// An administrator's correction of how an API's answer is classified: the API at hand means
/// something else by a status than HTTP says (a `403` whose problem type says "disk full" is
/// transient; a `422` is permanent).
///
/// Written `STATUS[ PROBLEM-TYPE]=CATEGORY`: `403 https://api.example.com/problems/quota=transient`,
/// `422=permanent`. A rule with a problem type matches only an answer whose RFC 9457 problem
/// details carry that `type`; of the rules matching an answer, the first with a problem type wins,
/// then the first without.
public struct ClassificationOverride: Sendable, Equatable, CustomStringConvertible {
    /// What an overridden answer becomes.
    public enum Category: String, Sendable, Equatable, CaseIterable {
        /// Retried with back-off under an incident.
        case transient
        /// Rejected: the job is set aside as a dead letter, never retried by itself.
        case permanent
        /// The API asks to slow down (its `Retry-After` is still obeyed).
        case rateLimited = "rate-limited"
        /// The credentials are refused: re-authenticate once, then resubmit.
        case unauthenticated
        /// The API is as good as unreachable: wait for the probe.
        case unreachable
    }

    /// The status it applies to (100…599).
    public var status: Int
    /// The problem type it applies to; `nil`: any answer with the status.
    public var problemType: String?
    /// What the answers it matches become.
    public var category: Category

    /// A rule; ``parse(_:)`` makes one from its written form.
    public init(status: Int, problemType: String? = nil, category: Category) {
        self.status = status
        self.problemType = problemType
        self.category = category
    }

    /// How a rule is written, for error messages.
    public static let expectation =
        "STATUS[ PROBLEM-TYPE]=CATEGORY (\"422=permanent\", \"403 https://api.example.com/problems/quota=transient\"), CATEGORY one of "
        + Category.allCases.map(\.rawValue).joined(separator: ", ")

    /// Parses one rule; `nil` with the reason when it is not one.
    public static func parse(_ text: String) -> Result<ClassificationOverride, ParseError> {
        guard let equals = text.lastIndex(of: "=") else { return .failure(ParseError("has no \"=CATEGORY\"")) }
        let categoryText = text[text.index(after: equals)...].trimmingSpaces
        guard let category = Category(rawValue: categoryText.lowercased()) else {
            return .failure(ParseError("\"\(categoryText)\" is not a category"))
        }
        let match = text[..<equals].split(separator: " ", omittingEmptySubsequences: true)
        guard let first = match.first, let status = Int(first), (100...599).contains(status) else {
            return .failure(ParseError("does not start with an HTTP status (100 to 599)"))
        }
        guard match.count <= 2 else { return .failure(ParseError("has more than a status and a problem type before \"=\"")) }
        guard (400...599).contains(status) else {
            return .failure(ParseError("\(status) is not a failure: only 4xx and 5xx answers are classified"))
        }
        return .success(ClassificationOverride(status: status, problemType: match.count == 2 ? String(match[1]) : nil, category: category))
    }

    /// Why a text is not a rule, e.g. `"abc" is not a category`.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        /// The reason, for a message naming the rule.
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The rule as it is written, e.g. `403 https://api.example.com/problems/quota=transient`.
    public var description: String {
        "\(status)\(problemType.map { " " + $0 } ?? "")=\(category.rawValue)"
    }

    /// Whether the rule applies to `failure`.
    func matches(_ failure: HTTPFailure) -> Bool {
        guard failure.status == status else { return false }
        guard let problemType else { return true }
        return failure.problem?.type == problemType
    }

    /// The error category the rule gives `failure`.
    func category(for failure: HTTPFailure) -> ErrorCategory {
        switch category {
        case .transient: .transient
        case .permanent: .invalid(reason: "HTTP \(status)\(problemType.map { " " + $0 } ?? "") is permanent for this API (api.classify)")
        case .rateLimited: .rateLimited(retryAfter: failure.retryAfter)
        case .unauthenticated: .unauthenticated
        case .unreachable: .unreachable
        }
    }
}

extension HTTPFailure {
    /// This failure as `rules` classify it: the first rule matching its status and problem type,
    /// else the first matching its status alone; unchanged when none does. The cause becomes
    /// `override<STATUS>` and the operator text says which rule decided.
    public func overridden(by rules: [ClassificationOverride]) -> HTTPFailure {
        guard status != nil, !rules.isEmpty else { return self }
        let rule = rules.first { $0.problemType != nil && $0.matches(self) } ?? rules.first { $0.problemType == nil && $0.matches(self) }
        guard let rule else { return self }
        var failure = self
        failure.category = rule.category(for: self)
        failure.cause = "override\(rule.status)"
        failure.operatorText.message += " Classified \(rule.category.rawValue) by api.classify (\(rule))."
        return failure
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
