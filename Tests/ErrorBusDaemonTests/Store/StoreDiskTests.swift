import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Glibc
import Testing

/// The store on a really full, then read-only, file system: a small tmpfs mounted for the test.
@Suite(.enabled(if: Tmpfs.isAvailable, "mounting a tmpfs needs root"))
struct StoreDiskTests {
    @Test(.timeLimit(.minutes(1)))
    func aFullDiskIsReportedAndLosesNothingCommitted() async throws {
        try await Tmpfs.with(size: 2 << 20) { mountPoint in
            let state = mountPoint + "/state"
            // Room to give back later.
            let reserve = mountPoint + "/reserve"
            try Data(count: 256 << 10).write(to: URL(fileURLWithPath: reserve))

            let store = try JobStore(directory: state, logger: StoreTestDirectory.logger())
            var committed: [String] = []
            var failure: StoreError?
            for batch in 0..<1_000 {
                do {
                    let result = try await store.enqueue(StoreTestDirectory.newJobs(100, prefix: "b\(batch)"))
                    committed += result.inserted.map(\.id)
                } catch let error as StoreError {
                    failure = error
                    break
                }
            }
            let error = try #require(failure)
            #expect(error.isDiskFull, "\(error)")
            #expect(error.isFatal)
            #expect(error.description.contains("is full"))
            #expect(error.description.contains(state))
            #expect(committed.count >= 100)

            // Everything committed is still there, through the same store…
            #expect(try store.counts().queued == committed.count)
            #expect(try store.job(committed.last!) != nil)

            // …and writes work again once there is room, without reopening.
            try FileManager.default.removeItem(atPath: reserve)
            let after = try await store.enqueue(StoreTestDirectory.newJobs(10, prefix: "after"))
            #expect(after.inserted.count == 10)
            try await store.close()

            let reopened = try JobStore(directory: state, logger: StoreTestDirectory.logger())
            #expect(try reopened.checkIntegrity() == ["ok"])
            #expect(try reopened.counts().queued == committed.count + 10)
            try await reopened.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aReadOnlyFileSystemIsReportedWithItsPath() async throws {
        try await Tmpfs.with(size: 4 << 20) { mountPoint in
            let state = mountPoint + "/state"
            let store = try JobStore(directory: state, logger: StoreTestDirectory.logger())
            _ = try await store.enqueue(StoreTestDirectory.newJobs(5))
            try await store.close()

            try Tmpfs.remount(mountPoint, readOnly: true)
            let error = #expect(throws: StoreError.self) {
                _ = try JobStore(directory: state, logger: StoreTestDirectory.logger())
            }
            #expect(error?.isReadOnly == true, "\(String(describing: error))")
            #expect(error?.isFatal == true)
            #expect(error?.description.contains(state) == true)

            try Tmpfs.remount(mountPoint, readOnly: false)
            let again = try JobStore(directory: state, logger: StoreTestDirectory.logger())
            #expect(try again.counts().queued == 5)
            try await again.close()
        }
    }
}
