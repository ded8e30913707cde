import Varlink

/// Implements `io.errorbus.test`, and tells the test what its handlers do.
final class TestService: Sendable {
    /// Something a handler did that a test waits for.
    enum Event: Sendable, Equatable {
        case waiting
        /// A `Flood` handler ended, after sending this many replies.
        case floodEnded(sent: Int)
        /// A `Linger` handler ended; `cancelled` if its task had been cancelled.
        case lingerEnded(cancelled: Bool)
    }

    let events: AsyncStream<Event>
    private let eventContinuation: AsyncStream<Event>.Continuation
    private let gate: AsyncStream<Void>
    private let gateContinuation: AsyncStream<Void>.Continuation

    init() {
        (events, eventContinuation) = AsyncStream.makeStream(of: Event.self)
        (gate, gateContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    /// Lets every `Wait` call, present and future, reply.
    func openGate() {
        gateContinuation.finish()
    }

    /// Waits for the next event that `matches`, and returns it.
    func next(where matches: (Event) -> Bool) async -> Event? {
        for await event in events where matches(event) {
            return event
        }
        return nil
    }

    /// - Parameter errorInterface: Where the server's own errors are declared; the router's
    ///   default when nil.
    func router(errorInterface: String? = nil) throws -> VarlinkRouter {
        var router =
            if let errorInterface {
                try VarlinkRouter(vendor: "errorbus", product: "varlink-tests", version: "1.0", url: "https://errorbus.example/varlink", errorInterface: errorInterface)
            } else {
                VarlinkRouter(vendor: "errorbus", product: "varlink-tests", version: "1.0", url: "https://errorbus.example/varlink")
            }
        try router.add(TestAPI.interface())
        try router.implement(TestAPI.echo) { parameters, _ in
            TestAPI.Text(text: String(repeating: parameters.text, count: parameters.times ?? 1))
        }
        try router.implementStreaming(TestAPI.count) { parameters, _, replies in
            guard parameters.to > 0 else { throw VarlinkService.invalidParameter.error(.init(parameter: "to")) }
            for value in 1..<parameters.to {
                try await replies.send(TestAPI.Number(value: value))
            }
            return TestAPI.Number(value: parameters.to)
        }
        let events = eventContinuation
        try router.implementStreaming(TestAPI.flood) { _, _, replies in
            var sent = 0
            defer { events.yield(.floodEnded(sent: sent)) }
            let blob = TestAPI.Blob(blob: String(repeating: "x", count: 64 * 1024))
            while true {
                try await replies.send(blob)
                sent += 1
            }
        }
        try router.implementStreaming(TestAPI.linger) { _, _, replies in
            defer { events.yield(.lingerEnded(cancelled: Task.isCancelled)) }
            try await replies.send(TestAPI.Number(value: 1))
            let (never, _) = AsyncStream.makeStream(of: Never.self)
            for await _ in never {}
            return TestAPI.Number(value: 2)
        }
        try router.implement(TestAPI.whoAmI) { _, context in
            TestAPI.Peer(pid: context.peer.pid, uid: context.peer.uid, gid: context.peer.gid)
        }
        let gate = self.gate
        try router.implement(TestAPI.wait) { _, _ in
            events.yield(.waiting)
            for await _ in gate {}
            return VarlinkEmpty()
        }
        try router.implement(TestAPI.fail) { parameters, _ in
            throw TestAPI.noSuchThing.error(parameters)
        }
        try router.implement(TestAPI.crash) { _, _ in
            struct Oops: Error {}
            throw Oops()
        }
        try router.implement(TestAPI.forecast) { _, _ in
            TestAPI.Weather(mood: .stormy, gusts: [12.5, 30], notes: ["north": "cold"], later: [])
        }
        return router
    }
}
