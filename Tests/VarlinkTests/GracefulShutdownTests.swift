import NIOCore
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing
@testable import Varlink

@Suite(.timeLimit(.minutes(1)))
struct GracefulShutdownTests {
    let service = TestService()

    @Test func stopsAcceptingClosesIdleConnectionsAndLetsCallsInProgressFinish() async throws {
        let service = self.service
        let directory = try TemporaryDirectory()
        let path = directory.path + "/shutdown.sock"
        let (listening, listeningContinuation) = AsyncStream.makeStream(of: Void.self)
        let server = VarlinkServer(router: try service.router(), configuration: .init(address: .unixSocket(path: path)), logger: quietLogger) {
            listeningContinuation.finish()
        }
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                for await _ in listening {}

                // A connection with a call in progress, and an idle one.
                // Each connection goes through executeThenClose as soon as it exists: NIO traps when
                // an open NIOAsyncChannel is dropped.
                try await RawConnection.connect(to: path).channel.executeThenClose { busyInbound, busyOutbound in
                    try await RawConnection.connect(to: path).channel.executeThenClose { idleInbound, idleOutbound in
                        var busyMessages = busyInbound.makeAsyncIterator()
                        var idleMessages = idleInbound.makeAsyncIterator()
                        try await idleOutbound.write(ByteBuffer(string: #"{"method":"io.errorbus.test.Echo","parameters":{"text":"i"}}"# + "\0"))
                        #expect(try await idleMessages.nextText() != nil)
                        try await busyOutbound.write(ByteBuffer(string: #"{"method":"io.errorbus.test.Wait"}"# + "\0"))
                        _ = await service.next { $0 == .waiting }

                        trigger.triggerGracefulShutdown()

                        // The idle connection is closed at once.
                        #expect(try await idleMessages.nextText() == nil)
                        // New connections are refused (or, caught in the backlog as the listening
                        // socket closes, reset). The shutdown runs concurrently: until it has
                        // closed the socket, a connection may still be served.
                        let refused = try await withDeadline {
                            while true {
                                do {
                                    try await withClient(path) { _ = try await $0.call(VarlinkService.getInfo) }
                                    await Task.yield()
                                } catch let error as VarlinkClientError where error.code == .connectFailed || error.code == .connectionClosed {
                                    return true
                                }
                            }
                        }
                        #expect(refused)
                        // The call in progress finishes, then its connection closes.
                        service.openGate()
                        #expect(try json(await busyMessages.nextText()) == json(#"{"parameters":{}}"#))
                        #expect(try await busyMessages.nextText() == nil)
                    }
                }
                // run() returns by itself, without being cancelled (the time limit bounds the wait).
                try await group.next()
            }
        }
    }

    @Test func streamingCallsAreEndedByTheShutdown() async throws {
        let service = self.service
        let directory = try TemporaryDirectory()
        let path = directory.path + "/stream.sock"
        let (listening, listeningContinuation) = AsyncStream.makeStream(of: Void.self)
        let server = VarlinkServer(router: try service.router(), configuration: .init(address: .unixSocket(path: path)), logger: quietLogger) {
            listeningContinuation.finish()
        }
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                for await _ in listening {}
                try await withClient(path) { client throws in
                    var received = 0
                    do {
                        for try await _ in try await client.stream(TestAPI.flood, VarlinkEmpty()) {
                            received += 1
                            if received == 1 { trigger.triggerGracefulShutdown() }
                        }
                    } catch let error as VarlinkClientError where error.code == .connectionClosed {
                        // The handler was cancelled before it could send a last reply.
                    }
                    #expect(received >= 1)
                }
                // run() returns by itself, without being cancelled (the time limit bounds the wait).
                try await group.next()
            }
        }
    }

    /// Connections accepted while the server stops never reach its accept loop; it must close
    /// them itself (NIO traps when an open `NIOAsyncChannel` is dropped).
    @Test(arguments: [true, false])
    func connectionsArrivingWhileTheServerStopsAreClosed(graceful: Bool) async throws {
        let service = self.service
        let directory = try TemporaryDirectory()
        let path = directory.path + "/busy.sock"
        for _ in 0..<10 {
            let (listening, listeningContinuation) = AsyncStream.makeStream(of: Void.self)
            let server = VarlinkServer(router: try service.router(), configuration: .init(address: .unixSocket(path: path)), logger: quietLogger) {
                listeningContinuation.finish()
            }
            await testGracefulShutdown { trigger in
                await withTaskGroup(of: Void.self) { group in
                    // Whether run() returns or throws (when cancelled), it must not crash.
                    group.addTask { try? await server.run() }
                    for await _ in listening {}
                    for _ in 0..<20 {
                        group.addTask {
                            // Connections that fail or are closed are what this test expects.
                            try? await withClient(path) { _ = try await $0.call(VarlinkService.getInfo) }
                        }
                    }
                    await Task.yield()
                    if graceful { trigger.triggerGracefulShutdown() } else { group.cancelAll() }
                    await group.waitForAll()
                }
            }
        }
    }
}
