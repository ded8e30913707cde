import ErrorBus

// sample: upload-error
/// Why an upload failed, in the bus's terms: a category (which policy the bus runs), a short,
/// stable cause (with the scope, what makes failures one incident) and what an operator reads.
enum UploadError: CategorizedError {
    case unreachable(host: String)
    case unauthorized
    case rejected(report: String, reason: String)

    init(_ failure: APIFailure, sending report: Report, to host: String) {
        switch failure {
        case .connectionRefused: self = .unreachable(host: host)
        case .unauthorized, .secretRefused: self = .unauthorized
        case .unprocessable(let reason): self = .rejected(report: report.id, reason: reason)
        }
    }

    var category: ErrorCategory {
        switch self {
        case .unreachable: .unreachable
        case .unauthorized: .unauthenticated
        case .rejected(_, let reason): .invalid(reason: reason)
        }
    }

    /// No report's id in it: a thousand uploads refused for one outage are one incident.
    var cause: String {
        switch self {
        case .unreachable: "connectionRefused"
        case .unauthorized: "http401"
        case .rejected: "http422"
        }
    }

    /// Without a `next`, the bus says what it does for the category.
    var operatorText: OperatorText {
        switch self {
        case .unreachable(let host):
            OperatorText(title: "API unreachable", message: "Could not connect to \(host): connection refused.")
        case .unauthorized:
            OperatorText(title: "Access token refused", message: "The API refused the access token (401).")
        case .rejected(let report, let reason):
            OperatorText(
                title: "Report rejected",
                message: "The API rejected report \(report): \(reason).",
                next: "The report is set aside; fix it and queue it again."
            )
        }
    }
}
// end sample
