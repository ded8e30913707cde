package import ErrorBus

/// A store error handed to the bus pauses the service when it is ``StoreError/isFatal`` (the
/// bus's `fatal` policy) and is backed off as `transient` otherwise.
extension StoreError: CategorizedError {
    package var category: ErrorCategory { isFatal ? .fatal : .transient }

    package var cause: String {
        switch code {
        case .diskFull: "stateDiskFull"
        case .readOnly: "stateReadOnly"
        case .permissionDenied: "statePermissionDenied"
        case .corrupt: "stateCorrupt"
        case .inUse: "stateInUse"
        case .newer: "stateNewer"
        case .cannotOpen: "stateCannotOpen"
        case .closed: "stateClosed"
        case .other: "stateError"
        }
    }

    package var operatorText: OperatorText {
        let title =
            switch code {
            case .diskFull: "Disk full"
            case .readOnly: "State directory read-only"
            case .permissionDenied: "State directory not accessible"
            case .corrupt: "State database damaged"
            case .inUse: "State directory in use"
            case .newer: "State database from a newer errorbusd"
            case .cannotOpen: "State database cannot be opened"
            case .closed: "State store closed"
            case .other: "State store error"
            }
        return OperatorText(title: title, message: description)
    }
}
