import Foundation
import Testing
import Varlink

@Suite(.timeLimit(.minutes(1)))
struct ClientTests {
    let service = TestService()

    @Test func callThatOutlivesItsTimeoutFailsAndClosesTheConnection() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                let error = await #expect(throws: VarlinkClientError.self) {
                    try await client.call(TestAPI.wait, timeout: .milliseconds(200))
                }
                #expect(error?.code == .timeout)
                // The reply could still arrive later, so the connection is not used again.
                let after = await #expect(throws: VarlinkClientError.self) { try await client.call(TestAPI.echo, .init(text: "x")) }
                #expect(after?.code == .timeout)
            }
        }
    }

    @Test func configuredCallTimeoutApplies() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path, configuration: .init(callTimeout: .milliseconds(200))) { client throws in
                let error = await #expect(throws: VarlinkClientError.self) { try await client.call(TestAPI.wait) }
                #expect(error?.code == .timeout)
            }
        }
    }

    @Test func unfinishedStreamOccupiesTheConnection() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                let stream = try await client.stream(TestAPI.count, .init(to: 3))
                let error = await #expect(throws: VarlinkClientError.self) { try await client.call(TestAPI.echo, .init(text: "x")) }
                #expect(error?.code == .busy)
                var values: [Int] = []
                for try await reply in stream { values.append(reply.value) }
                #expect(values == [1, 2, 3])
                #expect(try await client.call(TestAPI.echo, .init(text: "x")) == .init(text: "x"))
            }
        }
    }

    @Test func onewayCallReturnsWithoutAReply() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                try await client.callOneway(TestAPI.echo, .init(text: "fire"))
                #expect(try await client.call(TestAPI.echo, .init(text: "and forget")) == .init(text: "and forget"))
            }
        }
    }

    @Test func connectingToNothingFailsWithTheReason() async throws {
        let directory = try TemporaryDirectory()
        let error = await #expect(throws: VarlinkClientError.self) {
            try await withClient(directory.path + "/nobody.sock") { _ in }
        }
        #expect(error?.code == .connectFailed)
        #expect(error?.errno == ENOENT)
    }

    struct WrongShape: Codable, Sendable {
        var text: Int
    }

    @Test func replyOfTheWrongShapeIsReportedAndTheConnectionStaysUsable() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                let mistaken = VarlinkMethod<TestAPI.EchoParameters, WrongShape>(interface: TestAPI.name, name: "Echo")
                let error = await #expect(throws: VarlinkClientError.self) { try await client.call(mistaken, .init(text: "x")) }
                #expect(error?.code == .invalidReply)
                #expect(try await client.call(TestAPI.echo, .init(text: "y")) == .init(text: "y"))
            }
        }
    }
}
