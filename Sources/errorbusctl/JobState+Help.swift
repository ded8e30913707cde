import ArgumentParser
import ErrorBusControl

/// What `--state` takes, explained in `errorbusctl jobs --help` and in the manual (which lists
/// an option's values only when they are explained).
extension Control.JobState {
    static var allValueDescriptions: [String: String] {
        Dictionary(uniqueKeysWithValues: allCases.map { state in
            let text = switch state {
            case .queued: "waiting for an upload"
            case .inFlight: "being uploaded"
            case .parked: "held by an open incident until its cause is gone"
            case .delivered: "uploaded"
            case .deadLettered: "rejected by the API (see errorbusctl dead)"
            case .discarded: "given up by an operator"
            }
            return (state.rawValue, text)
        })
    }
}
