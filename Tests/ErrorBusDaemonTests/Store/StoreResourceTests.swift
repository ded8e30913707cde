import ErrorBusDaemon
import ErrorBusStore
import Testing

@Suite struct StoreResourceTests {
    @Test func validatorsAreRememberedReplacedAndKeptAcrossARestart() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            let catalog = "http://api.test/v1/resources/catalog"
            let prices = "https://cdn.test/prices.json"
            #expect(try store.validators(forResource: "catalog", url: catalog) == nil)
            try store.setValidators(ResourceValidators(etag: "\"a1\""), forResource: "catalog", url: catalog)
            try store.setValidators(ResourceValidators(etag: "W/\"b2\"", lastModified: "Tue, 24 Nov 2026 10:00:00 GMT"), forResource: "prices", url: prices)
            try store.setValidators(ResourceValidators(etag: "\"a2\""), forResource: "catalog", url: catalog)
            #expect(try store.validators(forResource: "catalog", url: catalog) == ResourceValidators(etag: "\"a2\""))
            try await store.close()

            let restarted = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try restarted.validators(forResource: "catalog", url: catalog)?.etag == "\"a2\"")
            #expect(
                try restarted.validators(forResource: "prices", url: prices)
                    == ResourceValidators(etag: "W/\"b2\"", lastModified: "Tue, 24 Nov 2026 10:00:00 GMT")
            )
            try restarted.setValidators(ResourceValidators(), forResource: "prices", url: prices)
            #expect(try restarted.validators(forResource: "prices", url: prices) == ResourceValidators())
            try await restarted.close()
        }
    }

    @Test func validatorsOfACopyFromAnotherURLAreNotSent() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            try store.setValidators(ResourceValidators(etag: "\"old\""), forResource: "flags.json", url: "https://old.test/flags.json")
            #expect(try store.validators(forResource: "flags.json", url: "https://new.test/flags.json") == nil)
            try await store.close()
        }
    }
}
