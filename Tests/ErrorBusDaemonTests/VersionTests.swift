import ErrorBusControl
import Testing

@Suite struct VersionTests {
    @Test func versionIsSemantic() {
        #expect(ErrorBusVersion.current.split(separator: ".").count == 3)
    }
}
