import Varlink

/// `io.errorbus.test`: the interface the tests serve and call.
enum TestAPI {
    static let name = "io.errorbus.test"

    struct EchoParameters: Codable, Sendable, Equatable {
        var text: String
        var times: Int?
    }

    struct Text: Codable, Sendable, Equatable {
        var text: String
    }

    struct CountParameters: Codable, Sendable, Equatable {
        var to: Int
    }

    struct Number: Codable, Sendable, Equatable {
        var value: Int
    }

    struct Blob: Codable, Sendable {
        var blob: String
    }

    struct Peer: Codable, Sendable, Equatable {
        var pid: Int32
        var uid: UInt32
        var gid: UInt32
    }

    struct Identifier: Codable, Sendable, Equatable {
        var id: Int
    }

    enum Mood: String, Codable, Sendable, VarlinkEnum {
        case calm
        case stormy
    }

    struct Weather: Codable, Sendable, Equatable, VarlinkNamedType {
        var mood: Mood
        var gusts: [Double]
        var notes: [String: String]?
        var later: [Weather]
    }

    static let echo = VarlinkMethod<EchoParameters, Text>(
        interface: name,
        name: "Echo",
        documentation: "Returns the text, repeated `times` times (once if absent)."
    )
    static let count = VarlinkMethod<CountParameters, Number>(
        interface: name,
        name: "Count",
        documentation: "Streams the numbers from 1 to `to`; call it with 'more'."
    )
    static let flood = VarlinkMethod<VarlinkEmpty, Blob>(
        interface: name,
        name: "Flood",
        documentation: "Streams large replies until the client goes away."
    )
    static let linger = VarlinkMethod<VarlinkEmpty, Number>(
        interface: name,
        name: "Linger",
        documentation: "Streams one reply, then waits for nothing until cancelled."
    )
    static let whoAmI = VarlinkMethod<VarlinkEmpty, Peer>(
        interface: name,
        name: "WhoAmI",
        documentation: "The caller's credentials, as the server sees them."
    )
    static let wait = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(
        interface: name,
        name: "Wait",
        documentation: "Replies once the test opens the gate."
    )
    static let fail = VarlinkMethod<Identifier, VarlinkEmpty>(
        interface: name,
        name: "Fail",
        documentation: "Always fails with NoSuchThing."
    )
    static let crash = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: name, name: "Crash")
    static let notYet = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(interface: name, name: "NotYet")
    static let forecast = VarlinkMethod<VarlinkEmpty, Weather>(interface: name, name: "Forecast")
    static let noSuchThing = VarlinkErrorDeclaration<Identifier>(
        interface: name,
        name: "NoSuchThing",
        documentation: "There is no thing with this id."
    )

    static func interface() throws -> VarlinkInterface {
        try VarlinkInterface(
            name: name,
            documentation: "Methods for testing the Varlink server.",
            members: [
                .type(Weather.self, documentation: "What the sky does."),
                .method(echo), .method(count), .method(flood), .method(linger), .method(whoAmI), .method(wait),
                .method(fail), .method(crash), .method(notYet), .method(forecast),
                .error(noSuchThing),
            ]
        )
    }
}
