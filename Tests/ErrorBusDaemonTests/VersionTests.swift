import ErrorBusControl
import Testing

@Suite struct VersionTests {
    @Test func versionIsSemantic() {
        #expect(ErrorBusVersion.release.split(separator: ".").count == 3)
        #expect(ErrorBusVersion.release.split(separator: ".").allSatisfy { Int($0) != nil })
    }

    /// A build that names no version (swift build, as the tests are) reports the release.
    @Test func aBuildThatNamesNoVersionReportsTheRelease() {
        #expect(ErrorBusVersion.current == ErrorBusVersion.release)
    }
}
