import ErrorBusStore
import ErrorBusSupport
import Foundation
import Logging

/// `errorbusd --downgrade-store VERSION [--dry-run]`: the way back to an older errorbusd.
///
/// Run by the administrator, or by the package when apt goes back to an older version with
/// `ERRORBUSD_DOWNGRADE_STORE=yes`. Run as root, it works as the state directory's owner, so that
/// the files SQLite makes stay errorbusd's.
package struct StoreDowngrade: Sendable {
    /// The errorbusd to go back to.
    package let release: String
    /// Only say whether `release` reads the store as it is.
    package let dryRun: Bool

    package init(release: String, dryRun: Bool) {
        self.release = release
        self.dryRun = dryRun
    }

    /// Does it for the store in `directory`; prints what it found or did, and returns the exit
    /// status: 0 done (or, with `dryRun`, `release` reads the store as it is); 1 with `dryRun`
    /// when it does not, or errorbusd runs; ``Daemon/exitCode(of:)`` when the store cannot be used.
    package func run(directory: String) -> Int32 {
        let path = directory + "/" + JobStore.databaseFileName
        do {
            try SystemCall.becomeOwner(of: directory)
            if dryRun {
                let requirements = try JobStore.requirements(directory: directory, newerThan: release)
                guard requirements.isEmpty else {
                    print(
                        "errorbusd \(release) cannot read \(path) as it is: it predates \(Self.list(requirements)). "
                            + "`errorbusd --downgrade-store \(release)`, with errorbusd stopped, turns it back."
                    )
                    return 1
                }
                print("errorbusd \(release) reads \(path) as it is")
            } else {
                let undone = try JobStore.downgrade(directory: directory, to: release, logger: Logger(label: "errorbusd"))
                if undone.isEmpty {
                    print("errorbusd \(release) reads \(path) as it is: nothing to turn back")
                } else {
                    print("\(path) turned back for errorbusd \(release): undid \(Self.list(undone))")
                }
            }
            return 0
        } catch let error as StoreError where error.isInUse {
            FileHandle.standardError.write(Data("errorbusd: errorbusd runs on \(directory): stop it first (systemctl stop errorbusd.socket errorbusd.service)\n".utf8))
            return 1
        } catch {
            FileHandle.standardError.write(Data("errorbusd: \(error)\n".utf8))
            return Daemon.exitCode(of: error)
        }
    }

    private static func list(_ migrations: [String]) -> String {
        migrations.map { "\"\($0)\"" }.joined(separator: ", ")
    }
}
