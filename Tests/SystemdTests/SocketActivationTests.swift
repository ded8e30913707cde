import Systemd
import Testing
import TestSupport

/// Socket activation with the real `systemd-socket-activate`, which binds the sockets, waits for
/// a connection, then execs the helper with them as descriptors 3 and 4.
@Suite struct SocketActivationTests {
    @Test(.timeLimit(.minutes(1))) func passesNamedListeningSocketsTheServiceCanAccept() async throws {
        let directory = try TemporaryDirectory()
        let control = "\(directory.path)/control.sock"
        let metrics = "\(directory.path)/metrics.sock"
        let activator = try ChildProcess(
            "/usr/bin/systemd-socket-activate",
            ["--listen=\(control)", "--listen=\(metrics)", "--fdname=control:metrics", TestHelper.path, "listen-fds", "control"]
        )
        let listening = await activator.waitForStandardError(containing: "Listening on \(metrics)")
        try #require(listening, "systemd-socket-activate did not start: \(activator.standardError.text)")

        // The first connection starts the service; the service then accepts it on descriptor 3.
        let connection = try TestSocket.stream(connectedTo: control)
        #expect(try connection.readToEnd() == "hello from control\n")

        let finished = await activator.waitForExit()
        #expect(finished.status == 0, "\(finished.standardError)")
        #expect(finished.outputLines == ["fd 3 control", "fd 4 metrics", "second call same"])
    }

    @Test(.timeLimit(.minutes(1))) func ignoresDescriptorsMeantForAnotherProcess() async throws {
        let run = try await TestHelper.run(
            ["listen-fds"],
            environment: ["LISTEN_PID": "1", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "control:metrics"]
        )
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.outputLines == ["second call same"])
    }

    @Test(.timeLimit(.minutes(1))) func rejectsNamesThatDoNotMatchTheDescriptors() async throws {
        // $$ is the helper once the shell execs it; it has descriptor 3 open (the shell's
        // `3</dev/null`), but LISTEN_FDNAMES names two descriptors for one.
        let run = try await ChildProcess.run(
            "/bin/sh",
            ["-c", "LISTEN_PID=$$ exec \"$0\" listen-fds 3</dev/null", TestHelper.path],
            environment: ["LISTEN_FDS": "1", "LISTEN_FDNAMES": "control:metrics"]
        )
        #expect(run.outputLines == ["error 22 sd_listen_fds_with_names"], "\(run.standardError)")
    }

    @Test func looksDescriptorsUpByName() {
        let activation = SocketActivation(descriptors: [
            .init(fileDescriptor: 3, name: "control"),
            .init(fileDescriptor: 4, name: "http"),
            .init(fileDescriptor: 5, name: "http"),
        ])
        #expect(activation.first(named: "control")?.fileDescriptor == 3)
        #expect(activation.descriptors(named: "http").map(\.fileDescriptor) == [4, 5])
        #expect(activation.first(named: "varlink") == nil)
        #expect(!activation.isEmpty)
    }

    @Test func aProcessNobodyActivatedHasNoDescriptors() throws {
        #expect(try SocketActivation.fromEnvironment().isEmpty)
    }
}
