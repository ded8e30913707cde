import ErrorBus
import ErrorBusTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct ReauthenticationTests {
    @Test func fiveHundredConcurrent401sSignInOnceAndAllRunAgain() async throws {
        let renewed = Flag(false)
        let authenticator = ScriptedAuthenticator(held: true, onRenewed: { renewed.set(true) })
        // Five hundred at once: no concurrency limit in the way.
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .fixed(500)
        try await withRunningBus(configuration: configuration, authenticator: authenticator) { bus, _, events in
            let jobs = 500
            let failures = FailureCounter(target: jobs)
            await bus.connect(failures, to: "sync")
            let barrier = Barrier(count: jobs)
            async let values = withThrowingTaskGroup(of: Int.self, returning: [Int].self) { group in
                for number in 0..<jobs {
                    group.addTask {
                        try await bus.perform(.sync(number)) {
                            if !renewed.isSet {
                                await barrier.arriveAndWait()
                                throw TestFailure.unauthenticated
                            }
                            return number
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Every 401 has joined the incident while the one sign-in is still under way.
            await failures.reached()
            var started = authenticator.started.makeAsyncIterator()
            #expect(await started.next() == 1)
            try await events.next(.reauthStarted)
            let incident = try #require(await bus.snapshot().incidents.first)
            #expect(incident.state == .reauthenticating)
            #expect(incident.parked == jobs)

            authenticator.letAnswer()
            #expect(try await values.sorted() == Array(0..<jobs))
            #expect(authenticator.callCount == 1)
            #expect(events.count(of: .reauthStarted) == 1)
        }
    }

    @Test func rejectedCredentialsKeepEveryJobParkedUntilAnOperatorRetries() async throws {
        let renewed = Flag(false)
        let rejection = OperatorText(title: "Credentials rejected", message: "The token endpoint refused client errorbusd.")
        let authenticator = ScriptedAuthenticator(answers: [.rejected(rejection)], onRenewed: { renewed.set(true) })
        try await withRunningBus(authenticator: authenticator) { bus, clock, events in
            let completed = Counter()
            for number in 0..<20 {
                _ = await bus.submit(.sync(number)) {
                    if !renewed.isSet { throw TestFailure.unauthenticated }
                } completion: { outcome in
                    if case .succeeded = outcome { completed.increment() }
                }
            }
            let escalated = try #require(try await events.next(.escalated).incident)
            #expect(escalated.state == .needsOperator)
            #expect(escalated.parked == 20)
            #expect(escalated.text.title == "Credentials rejected")

            // Time alone changes nothing: no automatic sign-in loop against refused credentials.
            clock.advance(by: .seconds(3_600))
            let waiting = try #require(await bus.snapshot().incidents.first)
            #expect(waiting.state == .needsOperator)
            #expect(waiting.parked == 20)
            #expect(authenticator.callCount == 1)
            #expect(completed.count == 0)

            try await bus.retry(incident: escalated.id)
            let resolved = try #require(try await events.next(.incidentResolved).incident)
            #expect(resolved.released == 20)
            #expect(completed.count == 20)
            #expect(authenticator.callCount == 2)
        }
    }

    @Test func renewedCredentialsReleaseAnIncidentWaitingForAnOperator() async throws {
        let rejection = OperatorText(title: "Credentials rejected", message: "invalid_client")
        let authenticator = ScriptedAuthenticator(answers: [.rejected(rejection)])
        try await withRunningBus(authenticator: authenticator) { bus, _, events in
            let renewed = Flag(false)
            _ = await bus.submit(.sync(0)) {
                if !renewed.isSet { throw TestFailure.unauthenticated }
            } completion: { _ in }
            try await events.next(.escalated)
            renewed.set(true)
            await bus.credentialsRenewed(realm: "api")
            #expect(try await events.next(.incidentResolved).incident?.released == 1)
            #expect(authenticator.callCount == 1)
        }
    }

    @Test func anUnavailableAuthenticatorIsAskedAgainWithBackoff() async throws {
        let authenticator = ScriptedAuthenticator(answers: [.unavailable(reason: "token endpoint unreachable")])
        try await withRunningBus(authenticator: authenticator) { bus, clock, events in
            await bus.report(Failure(TestFailure.unauthenticated, job: .sync(0)))
            let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
            #expect(scheduled.step == .reauthenticate)
            #expect(scheduled.delay <= .seconds(1))
            clock.advance(by: scheduled.delay)
            try await events.next(.incidentResolved)
            #expect(authenticator.callCount == 2)
        }
    }
}
