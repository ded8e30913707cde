import ErrorBus

/// Why fetching the setting failed. Its causes are the uploader's (``UploadError``): one outage
/// of the API, or one expired token, is one incident for both services.
enum RefreshError: CategorizedError {
    case unreachable(host: String)
    case unauthorized
    case malformed(reason: String)

    init(_ failure: APIFailure, host: String) {
        switch failure {
        case .connectionRefused: self = .unreachable(host: host)
        case .unauthorized, .secretRefused: self = .unauthorized
        case .unprocessable(let reason): self = .malformed(reason: reason)
        }
    }

    var category: ErrorCategory {
        switch self {
        case .unreachable: .unreachable
        case .unauthorized: .unauthenticated
        case .malformed(let reason): .invalid(reason: reason)
        }
    }

    var cause: String {
        switch self {
        case .unreachable: "connectionRefused"
        case .unauthorized: "http401"
        case .malformed: "malformedSetting"
        }
    }

    var operatorText: OperatorText {
        switch self {
        case .unreachable(let host):
            OperatorText(title: "API unreachable", message: "Could not connect to \(host) for the setting: connection refused.")
        case .unauthorized:
            OperatorText(title: "Access token refused", message: "The API refused the access token (401).")
        case .malformed(let reason):
            OperatorText(
                title: "Setting unusable",
                message: "The API sent a setting that cannot be used: \(reason).",
                next: "The last good setting stays in force."
            )
        }
    }
}
