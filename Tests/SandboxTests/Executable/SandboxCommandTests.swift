import ArgumentParser
import Testing

@testable import errorbus_sandbox

/// Option parsing of `errorbus-sandbox`, without running it.
struct SandboxCommandTests {
    @Test func defaultsListenOnAnEphemeralLoopbackPort() throws {
        let command = try SandboxCommand.parse([])
        #expect(command.host == "127.0.0.1")
        #expect(command.port == 0)
        #expect(command.portFile == nil)
        #expect(command.tokenLifetime == 3600)
        #expect(command.clientId == "errorbus")
        #expect(command.clientSecretFile == nil)
        #expect(command.logLevel == "info")
        #expect(command.capacity == nil)
    }

    @Test func everyOptionParses() throws {
        let command = try SandboxCommand.parse([
            "--host", "::1", "--port", "8080", "--port-file", "/run/sandbox.port", "--token-lifetime", "60",
            "--client-id", "svc", "--client-secret-file", "/run/secret", "--log-level", "debug",
        ])
        #expect(command.host == "::1")
        #expect(command.port == 8080)
        #expect(command.portFile == "/run/sandbox.port")
        #expect(command.tokenLifetime == 60)
        #expect(command.clientId == "svc")
        #expect(command.clientSecretFile == "/run/secret")
        #expect(command.logLevel == "debug")
    }

    @Test(arguments: [
        ["--log-level", "loud"], ["--port", "70000"], ["--token-lifetime", "0"], ["--port", "x"],
        ["--capacity", #"{"concurrency":0}"#], ["--capacity", "eight"],
    ])
    func rejectsBadValues(arguments: [String]) {
        #expect(throws: (any Error).self) { try SandboxCommand.parse(arguments) }
    }
}
