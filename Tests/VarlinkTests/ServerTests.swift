import Foundation
import InMemoryLogging
import Logging
import Testing
@testable import Varlink

@Suite(.timeLimit(.minutes(1)))
struct ServerTests {
    let service = TestService()

    @Test func getInfoDescribesTheServiceAndItsInterfaces() async throws {
        try await withTestServer(router: service.router()) { path in
            let info = try await withClient(path) { try await $0.call(VarlinkService.getInfo) }
            #expect(info == VarlinkService.Info(
                vendor: "errorbus",
                product: "varlink-tests",
                version: "1.0",
                url: "https://errorbus.example/varlink",
                interfaces: ["org.varlink.service", "org.varlink.server", "io.errorbus.test"]
            ))
        }
    }

    /// The server's own errors are the service's to name: a method that fails without saying how
    /// is answered under the name given, and that interface is served.
    @Test func theServersOwnErrorsAreDeclaredWhereTheServiceSays() async throws {
        try await withTestServer(router: service.router(errorInterface: "com.example.errors")) { path in
            try await withClient(path) { client throws in
                let info = try await client.call(VarlinkService.getInfo)
                #expect(info.interfaces == ["org.varlink.service", "com.example.errors", "io.errorbus.test"])
                let description = try await client.call(VarlinkService.getInterfaceDescription, .init(interface: "com.example.errors"))
                #expect(description.description.contains("interface com.example.errors") && description.description.contains("error TooManyConnections"))
            }
        }
        #expect(throws: VarlinkDeclarationError.self) {
            try VarlinkRouter(vendor: "v", product: "p", version: "1", url: "u", errorInterface: "not an interface")
        }
    }

    @Test func getInterfaceDescriptionServesTheDefinition() async throws {
        let expected = try TestAPI.interface().description
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                let reply = try await client.call(VarlinkService.getInterfaceDescription, .init(interface: TestAPI.name))
                #expect(reply.description == expected)
                let error = await #expect(throws: VarlinkError.self) {
                    try await client.call(VarlinkService.getInterfaceDescription, .init(interface: "com.example.Missing"))
                }
                #expect(try error.flatMap { try VarlinkService.interfaceNotFound.parameters(of: $0) } == .init(interface: "com.example.Missing"))
            }
        }
    }

    @Test func methodCallRoundTrips() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                #expect(try await client.call(TestAPI.echo, .init(text: "ab", times: 3)) == .init(text: "ababab"))
                #expect(try await client.call(TestAPI.echo, .init(text: "ab")) == .init(text: "ab"))
                let weather = try await client.call(TestAPI.forecast)
                #expect(weather == .init(mood: .stormy, gusts: [12.5, 30], notes: ["north": "cold"], later: []))
            }
        }
    }

    @Test func streamingMethodSendsEveryReplyThenTheLast() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                var values: [Int] = []
                for try await reply in try await client.stream(TestAPI.count, .init(to: 5)) {
                    values.append(reply.value)
                }
                #expect(values == [1, 2, 3, 4, 5])
                // The connection serves the next call once the stream has ended.
                #expect(try await client.call(TestAPI.echo, .init(text: "next")) == .init(text: "next"))
            }
        }
    }

    @Test func streamingHandlerIsCancelledWhenTheClientGoesAway() async throws {
        let service = self.service
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "varlink-tests") { _ in logs }
        try await withTestServer(router: service.router(), logger: logger) { path in
            // A handler waiting for something to send…
            try await withClient(path) { client throws in
                for try await _ in try await client.stream(TestAPI.linger, VarlinkEmpty()) { break }
            }
            // …is cancelled once the connection closes.
            let ended = try await withDeadline { await service.next { if case .lingerEnded = $0 { true } else { false } } }
            #expect(ended == .lingerEnded(cancelled: true))
            // A handler sending replies ends too.
            try await withClient(path) { client throws in
                var received = 0
                for try await _ in try await client.stream(TestAPI.flood, VarlinkEmpty()) {
                    received += 1
                    if received == 3 { break }
                }
            }
            _ = try await withDeadline { await service.next { if case .floodEnded = $0 { true } else { false } } }
        }
        // A client going away is no failure of the method.
        #expect(logs.entries.allSatisfy { $0.level < .warning }, "\(logs.entries)")
    }

    @Test func streamingMethodCalledWithoutMoreAnswersExpectedMore() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                let error = await #expect(throws: VarlinkError.self) { try await client.call(TestAPI.count, .init(to: 2)) }
                #expect(error?.name == "org.varlink.service.ExpectedMore")
            }
        }
    }

    @Test func streamCanEndWithAnError() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                let error = await #expect(throws: VarlinkError.self) {
                    for try await _ in try await client.stream(TestAPI.count, .init(to: 0)) {}
                }
                #expect(try error.flatMap { try VarlinkService.invalidParameter.parameters(of: $0) } == .init(parameter: "to"))
                #expect(try await client.call(TestAPI.echo, .init(text: "still here")) == .init(text: "still here"))
            }
        }
    }

    @Test func unknownAndUnimplementedMethodsAnswerStandardErrors() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                let missingMethod = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: TestAPI.name, name: "Missing")
                let methodError = await #expect(throws: VarlinkError.self) { try await client.call(missingMethod) }
                #expect(try methodError.flatMap { try VarlinkService.methodNotFound.parameters(of: $0) } == .init(method: "io.errorbus.test.Missing"))

                let missingInterface = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: "com.example.Missing", name: "Ping")
                let interfaceError = await #expect(throws: VarlinkError.self) { try await client.call(missingInterface) }
                #expect(try interfaceError.flatMap { try VarlinkService.interfaceNotFound.parameters(of: $0) } == .init(interface: "com.example.Missing"))

                let notImplemented = await #expect(throws: VarlinkError.self) { try await client.call(TestAPI.notYet) }
                #expect(try notImplemented.flatMap { try VarlinkService.methodNotImplemented.parameters(of: $0) } == .init(method: "io.errorbus.test.NotYet"))
            }
        }
    }

    @Test func handlerErrorsBecomeErrorReplies() async throws {
        try await withTestServer(router: service.router()) { path in
            try await withClient(path) { client throws in
                let declared = await #expect(throws: VarlinkError.self) { try await client.call(TestAPI.fail, .init(id: 42)) }
                #expect(try declared.flatMap { try TestAPI.noSuchThing.parameters(of: $0) } == .init(id: 42))
                let undeclared = await #expect(throws: VarlinkError.self) { try await client.call(TestAPI.crash) }
                #expect(undeclared?.name == "org.varlink.server.InternalError")
            }
        }
    }

    @Test(arguments: [
        (#"{"times":2}"#, "text"),
        (#"{"text":"a","times":"two"}"#, "times"),
        (#"{"text":7}"#, "text"),
        (#"{"text":null}"#, "text"),
        (#"{"text":"a","colour":"red"}"#, "colour"),
        (#"[1,2]"#, "parameters"),
    ])
    func invalidParametersAreNamed(parameters: String, invalid: String) async throws {
        try await withTestServer(router: service.router()) { path in
            try await RawConnection.with(path) { send, messages throws in
                try await send(#"{"method":"io.errorbus.test.Echo","parameters":\#(parameters)}"# + "\0")
                let reply = try #require(try await messages.nextText())
                #expect(try json(reply) == json(#"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"\#(invalid)"}}"#))
                // The connection stays open for the next call.
                try await send(#"{"method":"io.errorbus.test.Echo","parameters":{"text":"ok"}}"# + "\0")
                #expect(try json(await messages.nextText()) == json(#"{"parameters":{"text":"ok"}}"#))
            }
        }
    }

    @Test func callWithoutParametersIsACallWithAnEmptyObject() async throws {
        try await withTestServer(router: service.router()) { path in
            try await RawConnection.with(path) { send, messages throws in
                try await send(#"{"method":"io.errorbus.test.Echo"}"# + "\0")
                #expect(try json(await messages.nextText()) == json(#"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"text"}}"#))
                try await send(#"{"method":"org.varlink.service.GetInfo"}"# + "\0")
                #expect(try await messages.nextText()?.hasPrefix(#"{"parameters":{"#) == true)
            }
        }
    }

    @Test func handlersSeeThePeersCredentials() async throws {
        try await withTestServer(router: service.router()) { path in
            let peer = try await withClient(path) { try await $0.call(TestAPI.whoAmI) }
            #expect(peer == .init(pid: getpid(), uid: getuid(), gid: getgid()))
        }
    }

    @Test func onewayCallsGetNoReply() async throws {
        try await withTestServer(router: service.router()) { path in
            try await RawConnection.with(path) { send, messages throws in
                try await send(#"{"method":"io.errorbus.test.Echo","parameters":{"text":"quiet"},"oneway":true}"# + "\0")
                try await send(#"{"method":"io.errorbus.test.Fail","parameters":{"id":1},"oneway":true}"# + "\0")
                try await send(#"{"method":"io.errorbus.test.Echo","parameters":{"text":"loud"}}"# + "\0")
                #expect(try json(await messages.nextText()) == json(#"{"parameters":{"text":"loud"}}"#))
            }
        }
    }

    @Test func pipelinedCallsAreAnsweredInOrder() async throws {
        try await withTestServer(router: service.router()) { path in
            try await RawConnection.with(path) { send, messages throws in
                try await send(
                    #"{"method":"io.errorbus.test.Echo","parameters":{"text":"a"}}"# + "\0"
                        + #"{"method":"io.errorbus.test.Count","parameters":{"to":2},"more":true}"# + "\0"
                        + #"{"method":"io.errorbus.test.Missing"}"# + "\0"
                        + #"{"method":"io.errorbus.test.Echo","parameters":{"text":"b"}}"# + "\0"
                )
                var replies: [String] = []
                for _ in 0..<5 { replies.append(try #require(try await messages.nextText())) }
                #expect(try replies.map(json) == [
                    #"{"parameters":{"text":"a"}}"#,
                    #"{"parameters":{"value":1},"continues":true}"#,
                    #"{"parameters":{"value":2}}"#,
                    #"{"error":"org.varlink.service.MethodNotFound","parameters":{"method":"io.errorbus.test.Missing"}}"#,
                    #"{"parameters":{"text":"b"}}"#,
                ].map(json))
            }
        }
    }

    @Test func upgradeIsRefused() async throws {
        try await withTestServer(router: service.router()) { path in
            try await RawConnection.with(path) { send, messages throws in
                try await send(#"{"method":"io.errorbus.test.Echo","parameters":{"text":"a"},"upgrade":true}"# + "\0")
                #expect(try json(await messages.nextText()) == json(#"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"upgrade"}}"#))
            }
        }
    }
}
