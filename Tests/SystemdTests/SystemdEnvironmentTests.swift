import TestSupport
import Foundation
import Glibc
import Systemd
import Testing

@Suite struct SystemdEnvironmentTests {
    @Test func readsWhatTheServiceManagerSet() {
        let environment = SystemdEnvironment(environment: [
            "INVOCATION_ID": "0b6e6c0c7f3a4f8e9a1d2c3b4a5f6e7d",
            "NOTIFY_SOCKET": "/run/systemd/notify",
            "JOURNAL_STREAM": "8:34567",
        ])
        #expect(environment.isUnderServiceManager)
        #expect(environment.invocationID == "0b6e6c0c7f3a4f8e9a1d2c3b4a5f6e7d")
        #expect(environment.notifySocket == "/run/systemd/notify")
        #expect(environment.journalStream == .init(device: 8, inode: 34567))
    }

    @Test func outsideSystemdThereIsNothing() {
        let environment = SystemdEnvironment(environment: ["JOURNAL_STREAM": "not-a-stream", "NOTIFY_SOCKET": ""])
        #expect(!environment.isUnderServiceManager)
        #expect(environment.journalStream == nil)
        #expect(!environment.standardErrorIsJournal)
    }

    @Test func journalStreamMatchesByDeviceAndInode() throws {
        let directory = try TemporaryDirectory()
        let stream = open("\(directory.path)/stream", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        let other = open("\(directory.path)/other", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        defer {
            close(stream)
            close(other)
        }
        var status = stat()
        try #require(fstat(stream, &status) == 0)

        let environment = SystemdEnvironment(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino)"])
        #expect(environment.isJournalStream(fileDescriptor: stream))
        #expect(!environment.isJournalStream(fileDescriptor: other))
        #expect(!SystemdEnvironment(environment: [:]).isJournalStream(fileDescriptor: stream))
    }
}
