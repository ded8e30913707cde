import ErrorBusDaemon
import ErrorBusStore
import Testing

@Suite struct StoreResourceTests {
    @Test func etagsAreRememberedReplacedAndForgotten() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try store.etag(forResource: "catalog") == nil)
            try store.setETag("\"a1\"", forResource: "catalog")
            try store.setETag("W/\"b2\"", forResource: "prices")
            try store.setETag("\"a2\"", forResource: "catalog")
            #expect(try store.etag(forResource: "catalog") == "\"a2\"")
            try await store.close()

            let restarted = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try restarted.etag(forResource: "catalog") == "\"a2\"")
            #expect(try restarted.etag(forResource: "prices") == "W/\"b2\"")
            try restarted.setETag(nil, forResource: "prices")
            #expect(try restarted.etag(forResource: "prices") == nil)
            try await restarted.close()
        }
    }
}
