@testable import ErrorBusDaemon
@testable import ErrorBusStore
import ErrorBusSupport
import Foundation
import Glibc
import Testing

/// The exit status that tells systemd whether a restart can help: what needs an administrator
/// (errorbusd.service's RestartPreventExitStatus=) is 65 or 73, anything else 1.
@Suite struct DaemonExitCodeTests {
    static func store(_ code: StoreError.Code) -> StoreError {
        StoreError(code, path: "/var/lib/errorbusd/errorbusd.sqlite", action: "opening the job store", detail: "test")
    }

    @Test func whatAnAdministratorMustFixEndsWithAStatusSystemdDoesNotRestart() {
        #expect(Daemon.exitCode(of: Self.store(.newer)) == 65)
        #expect(Daemon.exitCode(of: Self.store(.corrupt)) == 65)
        #expect(Daemon.exitCode(of: Self.store(.readOnly)) == 73)
        #expect(Daemon.exitCode(of: Self.store(.permissionDenied)) == 73)
        #expect(Daemon.exitCode(of: SystemCallError(call: "open", errnoCode: EROFS, path: "/var/lib/errorbusd")) == 73)
        #expect(Daemon.exitCode(of: CocoaError(.fileWriteVolumeReadOnly)) == 73)
    }

    @Test func whatMayPassEndsWithOne() {
        #expect(Daemon.exitCode(of: Self.store(.inUse)) == 1)
        #expect(Daemon.exitCode(of: Self.store(.diskFull)) == 1)
        #expect(Daemon.exitCode(of: SystemCallError(call: "open", errnoCode: EIO, path: "/x")) == 1)
        #expect(Daemon.exitCode(of: CancellationError()) == 1)
    }

    /// The unit does not restart on the statuses errorbusd uses for what needs an administrator.
    @Test func theUnitPreventsARestartOnThem() throws {
        let unit = try String(contentsOfFile: #filePath.components(separatedBy: "/Tests/")[0] + "/systemd/errorbusd.service", encoding: .utf8)
        let line = unit.split(separator: "\n").first { $0.hasPrefix("RestartPreventExitStatus=") }
        let statuses = Set((line ?? "").dropFirst("RestartPreventExitStatus=".count).split(separator: " ").map(String.init))
        #expect(statuses.isSuperset(of: ["65", "73", "78"]))
    }
}
