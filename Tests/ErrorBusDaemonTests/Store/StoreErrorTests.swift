import ErrorBus
@testable import ErrorBusStore
import ErrorBusSupport
import Glibc
import GRDB
import Testing

import ErrorBusDaemon

@Suite struct StoreErrorTests {
    private func classify(_ code: ResultCode, message: String = "message") -> StoreError {
        StoreError.classifying(
            DatabaseError(resultCode: code, message: message),
            database: "/var/lib/errorbusd/errorbusd.sqlite",
            directory: "/var/lib/errorbusd",
            action: "saving 3 new job(s)"
        )
    }

    @Test func sqliteResultCodesBecomeConditionsAnOperatorCanActOn() {
        let full = classify(.SQLITE_FULL, message: "database or disk is full")
        #expect(full.isDiskFull && full.isFatal)
        #expect(full.description.hasPrefix("The file system holding /var/lib/errorbusd/errorbusd.sqlite is full: errorbusd could not finish saving 3 new job(s)."))
        #expect(full.description.contains("SQLite error 13: database or disk is full"))
        #expect(classify(.SQLITE_IOERR_SHMSIZE).isDiskFull)

        let readOnly = classify(.SQLITE_READONLY)
        #expect(readOnly.isReadOnly && readOnly.isFatal && readOnly.description.contains("read-only"))
        #expect(classify(.SQLITE_READONLY_DIRECTORY).path == "/var/lib/errorbusd")

        #expect(classify(.SQLITE_CORRUPT).isCorrupt)
        #expect(classify(.SQLITE_NOTADB).isCorrupt)
        #expect(classify(.SQLITE_PERM).isPermissionDenied)

        let busy = classify(.SQLITE_BUSY)
        #expect(!busy.isFatal && !busy.isDiskFull && busy.description.contains("SQLite error 5"))
    }

    @Test func systemCallErrorsNameThePath() {
        func classify(_ code: CInt) -> StoreError {
            StoreError(systemCall: SystemCallError(call: "open", errnoCode: code, path: "/var/lib/errorbusd/errorbusd.lock"), action: "opening the job store")
        }
        let denied = classify(EACCES)
        #expect(denied.isPermissionDenied && denied.isFatal)
        #expect(denied.description.hasPrefix("Permission denied on /var/lib/errorbusd/errorbusd.lock"))
        #expect(classify(EROFS).isReadOnly)
        #expect(classify(ENOSPC).isDiskFull)
        #expect(classify(EDQUOT).isDiskFull)
        #expect(classify(EWOULDBLOCK).isInUse)
        #expect(classify(ENOENT).description.contains("No such file or directory"))
    }

    /// The lock is a file in the state directory: the message names it as the lock, and the
    /// directory as the directory.
    @Test func aStateDirectoryInUseNamesTheLockAndTheDirectory() {
        let inUse = StoreError(
            systemCall: SystemCallError(call: "flock", errnoCode: EWOULDBLOCK, path: "/var/lib/errorbusd/errorbusd.lock"),
            action: "opening the job store"
        )
        #expect(inUse.isInUse)
        #expect(
            inUse.description.hasPrefix(
                "Another process holds /var/lib/errorbusd/errorbusd.lock, the lock of the state directory /var/lib/errorbusd: "
            ),
            "\(inUse.description)"
        )
        #expect(!inUse.description.contains("state directory /var/lib/errorbusd/errorbusd.lock"))
    }

    @Test func fatalConditionsPauseTheServiceThroughTheBus() {
        let full = classify(.SQLITE_FULL)
        #expect(full.category == .fatal)
        #expect(full.cause == "stateDiskFull")
        #expect(full.operatorText.title == "Disk full")
        #expect(full.operatorText.message == full.description)
        #expect(classify(.SQLITE_BUSY).category == .transient)
    }
}
