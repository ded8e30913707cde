import Foundation
import Testing
import Varlink

/// Interoperability with the reference implementation of Varlink, the Python `varlink` package:
/// its client against our server, our client against its server. Serialized: see ``Python``.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct InteropTests {
    let service = TestService()

    @Test func referenceClientCallsOurServer() async throws {
        let output = try await withTestServer(router: service.router()) { path in
            try await Python.run("interop_client.py", [path])
        }
        #expect(output.status == 0, "\(output.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        let info = result?["info"] as? [String: Any]
        #expect(info?["vendor"] as? String == "errorbus")
        #expect(info?["interfaces"] as? [String] == ["org.varlink.service", "org.varlink.server", "io.errorbus.test"])
        let members = result?["members"] as? [String: [String]]
        #expect(members?["org.varlink.service"] == [
            "ExpectedMore", "GetInfo", "GetInterfaceDescription", "InterfaceNotFound", "InvalidParameter",
            "MethodNotFound", "MethodNotImplemented", "PermissionDenied",
        ])
        #expect(members?["org.varlink.server"] == ["InternalError", "InvalidMessage", "MessageTooLarge", "TooManyConnections"])
        #expect(members?["io.errorbus.test"] == [
            "Count", "Crash", "Echo", "Fail", "Flood", "Forecast", "Linger", "NoSuchThing", "NotYet", "Wait", "Weather", "WhoAmI",
        ])
        #expect((result?["echo"] as? [String: String]) == ["text": "abab"])
        #expect((result?["echoWithoutOptional"] as? [String: String]) == ["text": "once"])
        #expect((result?["count"] as? [Int]) == [1, 2, 3])
        let error = result?["error"] as? [String: Any]
        #expect(error?["name"] as? String == "io.errorbus.test.NoSuchThing")
        #expect((error?["parameters"] as? [String: Int]) == ["id": 7])
    }

    enum Interop {
        static let name = "org.example.interop"
        static let echo = VarlinkMethod<TestAPI.EchoParameters, TestAPI.Text>(interface: name, name: "Echo")
        static let count = VarlinkMethod<TestAPI.CountParameters, TestAPI.Number>(interface: name, name: "Count")
        static let fail = VarlinkMethod<TestAPI.Identifier, VarlinkEmpty>(interface: name, name: "Fail")
        static let noSuchThing = VarlinkErrorDeclaration<TestAPI.Identifier>(interface: name, name: "NoSuchThing")
        static let missing = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: name, name: "Missing")
    }

    @Test func ourClientCallsTheReferenceServer() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/python.sock"
        try await Python.withServer("interop_server.py", [path]) {
            try await withClient(path) { client throws in
                let info = try await client.call(VarlinkService.getInfo)
                #expect(info.vendor == "varlink.org")
                #expect(info.interfaces.contains(Interop.name))
                let description = try await client.call(VarlinkService.getInterfaceDescription, .init(interface: Interop.name))
                #expect(description.description.contains("method Echo(text: string, times: ?int) -> (text: string)"))

                #expect(try await client.call(Interop.echo, .init(text: "ab", times: 3)) == .init(text: "ababab"))
                #expect(try await client.call(Interop.echo, .init(text: "ab")) == .init(text: "ab"))

                var values: [Int] = []
                for try await reply in try await client.stream(Interop.count, .init(to: 4)) {
                    values.append(reply.value)
                }
                #expect(values == [1, 2, 3, 4])

                let error = await #expect(throws: VarlinkError.self) { try await client.call(Interop.fail, .init(id: 9)) }
                #expect(try error.flatMap { try Interop.noSuchThing.parameters(of: $0) } == .init(id: 9))

                let missing = await #expect(throws: VarlinkError.self) { try await client.call(Interop.missing) }
                #expect(missing?.name == "org.varlink.service.MethodNotFound")
            }
        }
    }
}
