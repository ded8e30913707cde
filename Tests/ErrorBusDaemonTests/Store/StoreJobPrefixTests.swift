import ErrorBusStore
import Foundation
import Testing

/// A job named by the first characters of its id, as `errorbusctl jobs` shows them.
@Suite struct StoreJobPrefixTests {
    static func file(_ id: String, service: String = "sync") -> OutboxFile {
        OutboxFile(id: id, service: service, fileName: "\(id).json", path: "/o/\(id).json", size: 1)
    }

    @Test func aPrefixFindsTheJobsWhoseIdStartsWithItAndNoOthers() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            let ids = ["abb9", "abc", "abc0", "abcf", "abd0", "ab", "a_c1", "a%c1", "ABC1"]
            _ = try await store.enqueue(ids.map { Self.file($0) } + [Self.file("abc7", service: "loader")])

            let abc = try store.jobs(idPrefix: "abc", limit: 10)
            #expect(abc.jobs.map(\.id) == ["abc", "abc0", "abc7", "abcf"])
            #expect(abc.total == 4)
            #expect(abc.jobs.first?.fileName == "abc.json")
            // Of one service; a page of them, and how many there are in all.
            #expect(try store.jobs(idPrefix: "abc", service: "sync", limit: 10).jobs.map(\.id) == ["abc", "abc0", "abcf"])
            let page = try store.jobs(idPrefix: "ab", service: "sync", limit: 2)
            #expect(page.jobs.map(\.id) == ["ab", "abb9"])
            #expect(page.total == 6)
            // A whole id is its own prefix; the characters of SQL patterns are plain characters;
            // the case counts.
            #expect(try store.jobs(idPrefix: "abcf", limit: 10).jobs.map(\.id) == ["abcf"])
            #expect(try store.jobs(idPrefix: "a_c", limit: 10).jobs.map(\.id) == ["a_c1"])
            #expect(try store.jobs(idPrefix: "a%", limit: 10).jobs.map(\.id) == ["a%c1"])
            #expect(try store.jobs(idPrefix: "AB", limit: 10).jobs.map(\.id) == ["ABC1"])
            #expect(try store.jobs(idPrefix: "abe", limit: 10).total == 0)
            #expect(try store.jobs(idPrefix: "abcf0", limit: 10).total == 0)
        }
    }

    @Test func theRangeEndsAtTheFirstStringAfterEveryStringWithThePrefix() {
        #expect(JobStore.firstString(after: "abc") == "abd")
        #expect(JobStore.firstString(after: "a9") == "a:")
        #expect(JobStore.firstString(after: "a\u{D7FF}") == "a\u{E000}")
        #expect(JobStore.firstString(after: "a\u{10FFFF}") == "b")
        #expect(JobStore.firstString(after: "\u{10FFFF}") == nil)
        #expect(JobStore.firstString(after: "") == nil)
    }
}
