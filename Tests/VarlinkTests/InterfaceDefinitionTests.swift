import Testing
@testable import Varlink

@Suite(.timeLimit(.minutes(1)))
struct InterfaceDefinitionTests {
    @Test func definitionIsDerivedFromTheSwiftTypes() throws {
        let expected = """
            # Methods for testing the Varlink server.
            interface io.errorbus.test

            # What the sky does.
            type Weather (mood: (calm, stormy), gusts: []float, notes: ?[string]string, later: []Weather)

            # Returns the text, repeated `times` times (once if absent).
            method Echo(text: string, times: ?int) -> (text: string)

            # Streams the numbers from 1 to `to`; call it with 'more'.
            method Count(to: int) -> (value: int)

            # Streams large replies until the client goes away.
            method Flood() -> (blob: string)

            # Streams one reply, then waits for nothing until cancelled.
            method Linger() -> (value: int)

            # The caller's credentials, as the server sees them.
            method WhoAmI() -> (pid: int, uid: int, gid: int)

            # Replies once the test opens the gate.
            method Wait() -> ()

            # Always fails with NoSuchThing.
            method Fail(id: int) -> ()

            method Crash() -> ()

            method NotYet() -> ()

            method Forecast() -> (
              mood: (calm, stormy),
              gusts: []float,
              notes: ?[string]string,
              later: []Weather
            )

            # There is no thing with this id.
            error NoSuchThing (id: int)

            """
        #expect(try TestAPI.interface().description == expected)
    }

    @Test func standardInterfaceMatchesTheSpecification() {
        let definition = VarlinkService.interface.description
        #expect(definition.hasPrefix("# The Varlink Service Interface is provided by every varlink service."))
        #expect(definition.contains("interface org.varlink.service\n"))
        #expect(definition.contains("method GetInfo() -> (\n  vendor: string,\n  product: string,\n  version: string,\n  url: string,\n  interfaces: []string\n)"))
        #expect(definition.contains("method GetInterfaceDescription(interface: string) -> (description: string)"))
        for error in [
            "error InterfaceNotFound (interface: string)", "error MethodNotFound (method: string)",
            "error MethodNotImplemented (method: string)", "error InvalidParameter (parameter: string)",
            "error PermissionDenied ()", "error ExpectedMore ()",
        ] {
            #expect(definition.contains(error))
        }
    }

    struct Node: Codable, Sendable, VarlinkNamedType {
        var name: String
        var children: [Node]
        var byName: [String: Node]?
    }

    struct Tree: Codable, Sendable {
        var root: Node
        var size: Int64
        var labels: [String: Bool]
        var ratio: Float?
    }

    @Test func namedTypesAreDeclaredOnceAndMayReferToThemselves() throws {
        let method = VarlinkMethod<Tree, Tree>(interface: "org.example.trees", name: "Grow")
        let interface = try VarlinkInterface(name: "org.example.trees", members: [.method(method)])
        #expect(interface.description == """
            interface org.example.trees

            type Node (name: string, children: []Node, byName: ?[string]Node)

            method Grow(root: Node, size: int, labels: [string]bool, ratio: ?float) -> (
              root: Node,
              size: int,
              labels: [string]bool,
              ratio: ?float
            )

            """)
    }

    @Test func maybeOfMaybeIsWrittenOnce() {
        #expect(VarlinkType.optional(.optional(.int)).description == "?int")
        #expect(VarlinkType.array(.optional(.string)).description == "[]?string")
    }

    enum PlainColor: String, Codable, Sendable {
        case red
    }

    struct Paint: Codable, Sendable {
        var color: PlainColor
    }

    struct BadField: Codable, Sendable {
        var _hidden: Int
    }

    @Test func declarationMistakesAreReported() throws {
        let fine = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: "org.example.ok", name: "Ping")

        #expect(throws: VarlinkDeclarationError.self) { try VarlinkInterface(name: "nodots", members: []) }
        #expect(throws: VarlinkDeclarationError.self) { try VarlinkInterface(name: "org.example.-bad", members: []) }
        #expect(throws: VarlinkDeclarationError.self) {
            try VarlinkInterface(name: "org.example.ok", members: [.method(VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: "org.example.ok", name: "lowercase"))])
        }
        #expect(throws: VarlinkDeclarationError.self) { try VarlinkInterface(name: "org.example.other", members: [.method(fine)]) }
        #expect(throws: VarlinkDeclarationError.self) { try VarlinkInterface(name: "org.example.ok", members: [.method(fine), .method(fine)]) }

        let enumError = #expect(throws: VarlinkDeclarationError.self) {
            try VarlinkInterface(name: "org.example.ok", members: [.method(VarlinkMethod<Paint, VarlinkEmpty>(interface: "org.example.ok", name: "Paint"))])
        }
        #expect(enumError?.message.contains("PlainColor") == true)
        #expect(throws: VarlinkDeclarationError.self) {
            try VarlinkInterface(name: "org.example.ok", members: [.method(VarlinkMethod<[Int], VarlinkEmpty>(interface: "org.example.ok", name: "Sum"))])
        }
        #expect(throws: VarlinkDeclarationError.self) {
            try VarlinkInterface(name: "org.example.ok", members: [.method(VarlinkMethod<BadField, VarlinkEmpty>(interface: "org.example.ok", name: "Hide"))])
        }
    }

    @Test func routerChecksImplementationsAgainstDeclarations() throws {
        var router = VarlinkRouter(vendor: "v", product: "p", version: "1", url: "u")
        try router.add(TestAPI.interface())
        #expect(throws: VarlinkDeclarationError.self) { try router.add(TestAPI.interface()) }
        let undeclared = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: TestAPI.name, name: "Undeclared")
        #expect(throws: VarlinkDeclarationError.self) { try router.implement(undeclared) { _, _ in VarlinkEmpty() } }
        let elsewhere = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: "org.example.missing", name: "Ping")
        #expect(throws: VarlinkDeclarationError.self) { try router.implement(elsewhere) { _, _ in VarlinkEmpty() } }
    }
}
