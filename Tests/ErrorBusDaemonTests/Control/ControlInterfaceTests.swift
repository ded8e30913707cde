import ErrorBus
import ErrorBusControl
import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Testing
import Varlink

/// The interface definition is a published contract (`errorbusctl --json` prints its types): a
/// change to it shows up as a change to `docs/io.errorbus.Control.varlink`.
@Suite struct ControlInterfaceTests {
    static let documented = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/io.errorbus.Control.varlink")

    /// `ERRORBUS_RECORD_INTERFACE=1 swift test --filter theDefinitionIsTheDocumentedOne` writes
    /// the new definition into the file instead, for a change that is meant.
    @Test func theDefinitionIsTheDocumentedOne() throws {
        if ProcessInfo.processInfo.environment["ERRORBUS_RECORD_INTERFACE"] == "1" {
            try Control.interface.description.write(to: Self.documented, atomically: true, encoding: .utf8)
        }
        let text = try String(contentsOf: Self.documented, encoding: .utf8)
        #expect(text == Control.interface.description, "update docs/io.errorbus.Control.varlink with the new definition (ERRORBUS_RECORD_INTERFACE=1 does):\n\(Control.interface.description)")
    }

    @Test func everyMutatingMethodSaysSo() {
        let definition = Control.interface.description
        for method in ["Retry", "Discard", "Cancel", "Pause", "Resume", "Reauthenticate", "Reload"] {
            #expect(definition.contains("# Mutating.") && definition.contains("method \(method)("), "\(method)")
        }
    }
}

/// The wire's enums take the daemon's raw values: every daemon value has its wire name.
@Suite struct ControlWireNameTests {
    @Test func everyCategoryAndStoredStateHasItsWireName() {
        for kind in ErrorCategory.Kind.allCases {
            #expect(Control.Category(rawValue: kind.rawValue) != nil, "\(kind)")
        }
        for state in JobState.allCases {
            #expect(Control.JobState(rawValue: state.rawValue) != nil, "\(state)")
        }
    }
}
