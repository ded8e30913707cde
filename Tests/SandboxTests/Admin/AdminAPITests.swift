import NIOCore
import NIOHTTP1
import Testing

@testable import Sandbox

@Suite(.timeLimit(.minutes(1)))
struct AdminAPITests {
    @Test(arguments: [
        #"{"mode":"bogus"}"#,
        #"{"route":"nowhere","mode":"down"}"#,
        #"{"mode":"status"}"#,
        #"{"mode":"status","status":200}"#,
        #"{"mode":"invalid","status":503}"#,
        #"{"mode":"slow"}"#,
        #"{"route":"items","mode":"rejectCredentials"}"#,
        #"{"mode":"expireTokens","for":3}"#,
        #"{"mode":"down","flap":{"on":0,"off":1}}"#,
        #"{"mode":"down","for":-1}"#,
        #"{"mode":"status","status":503,"retryAfter":1,"retryAfterForm":"weeks"}"#,
        #"not json"#,
    ])
    func rejectsBadFaultsWithAProblem(body: String) async throws {
        try await RunningSandbox.with { sandbox in
            let answer = try await sandbox.send(.POST, "/admin/faults", body: ByteBuffer(string: body))
            #expect(answer.status == 400)
            #expect(answer.headers.first(name: "Content-Type") == "application/problem+json")
            #expect(try answer.object()["detail"] is String)
            #expect(try await sandbox.stats().faults.isEmpty)
        }
    }

    @Test func anArrayIsAppliedAtOneInstantOrNotAtAll() async throws {
        try await RunningSandbox.with { sandbox in
            let rejected = try await sandbox.send(
                .POST,
                "/admin/faults",
                body: ByteBuffer(string: #"[{"route":"items","mode":"down"},{"mode":"bogus"}]"#)
            )
            #expect(rejected.status == 400)
            #expect(try await sandbox.stats().faults.isEmpty)

            let reports = try await sandbox.fault(#"[{"route":"items","mode":"down","for":10},{"route":"token","mode":"garbage","for":10}]"#)
                .json([FaultReport].self)
            #expect(reports.count == 2)
            #expect(reports[0].startsAtMs == reports[1].startsAtMs)
            #expect(reports[0].id != reports[1].id)
        }
    }

    @Test func faultsCanBeRemovedByIdByRouteOrAll() async throws {
        try await RunningSandbox.with { sandbox in
            let first = try await sandbox.fault(#"{"route":"items","mode":"down"}"#).json(FaultReport.self)
            try await sandbox.fault(#"{"route":"items","mode":"garbage"}"#)
            try await sandbox.fault(#"{"route":"token","mode":"garbage"}"#)
            try await sandbox.fault(#"{"mode":"garbage"}"#)

            #expect(try await sandbox.send(.DELETE, "/admin/faults/\(try #require(first.id))").status == 204)
            #expect(try await sandbox.send(.DELETE, "/admin/faults/\(try #require(first.id))").status == 404)
            #expect(try await sandbox.send(.DELETE, "/admin/faults?route=items").object()["removed"] as? Int == 1)
            #expect(try await sandbox.send(.DELETE, "/admin/faults?route=all").object()["removed"] as? Int == 1)
            #expect(try await sandbox.send(.DELETE, "/admin/faults").object()["removed"] as? Int == 1)
            #expect(try await sandbox.stats().faults.isEmpty)
        }
    }

    @Test func adminIsNeverFaultedNorCounted() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"mode":"down"}"#)
            #expect(try await sandbox.send(.GET, "/admin/faults").status == 200)
            #expect(try await sandbox.send(.GET, "/admin/nothing-here").status == 404)
            let stats = try await sandbox.stats()
            #expect(stats.requests.total == 0)
            #expect(try await sandbox.send(.GET, "/admin/resources").object()["resources"] is [Any])
        }
    }
}
