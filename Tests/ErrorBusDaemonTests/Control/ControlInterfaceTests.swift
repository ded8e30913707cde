import ErrorBusControl
import Foundation
import Testing
import Varlink

/// The interface definition is a published contract (`errorbusctl --json` prints its types): a
/// change to it shows up as a change to `docs/io.errorbus.Control.varlink`.
@Suite struct ControlInterfaceTests {
    static let documented = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/io.errorbus.Control.varlink")

    @Test func theDefinitionIsTheDocumentedOne() throws {
        let text = try String(contentsOf: Self.documented, encoding: .utf8)
        #expect(text == Control.interface.description, "update docs/io.errorbus.Control.varlink with the new definition:\n\(Control.interface.description)")
    }

    @Test func everyMutatingMethodSaysSo() {
        let definition = Control.interface.description
        for method in ["Retry", "Discard", "Cancel", "Pause", "Resume", "Reauthenticate", "Reload"] {
            #expect(definition.contains("# Mutating.") && definition.contains("method \(method)("), "\(method)")
        }
    }
}
