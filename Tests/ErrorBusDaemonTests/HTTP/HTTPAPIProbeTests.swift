import AsyncHTTPClient
import ErrorBus
import ErrorBusDaemon
import ErrorBusHTTP
import InMemoryLogging
import Logging
import Testing

/// `APIProbe` against the sandbox's `/healthz`.
@Suite(.timeLimit(.minutes(1)))
struct HTTPAPIProbeTests {
    static func probe(_ sandbox: LiveSandbox, localChecks: [String: APIProbe.LocalCheck] = [:]) -> APIProbe {
        APIProbe(
            // Generous: these tests judge answers, not time, and share the cores with the rest of
            // the suite.
            configuration: .init(baseURL: sandbox.baseURL + "/", timeout: .seconds(15)),
            client: sandbox.client,
            localChecks: localChecks,
            logger: Logger(label: "probe") { _ in InMemoryLogHandler() }
        )
    }

    @Test func exactly204IsReachable() async throws {
        try await LiveSandbox.with { sandbox in
            #expect(await Self.probe(sandbox).probe(sandbox.origin, kind: .unreachable) == .reachable)
        }
    }

    @Test func aRedirectIsACaptivePortal() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"captivePortal"}"#)
            #expect(
                await Self.probe(sandbox).probe(sandbox.origin, kind: .unreachable)
                    == .unreachable(reason: "redirected to /login: a captive portal or proxy answers instead of the API")
            )
        }
    }

    @Test func aPageInsteadOf204IsUnreachable() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"captivePortal","portal":"page"}"#)
            let result = await Self.probe(sandbox).probe(sandbox.origin, kind: .unreachable)
            #expect(
                result
                    == .unreachable(
                        reason:
                            "\(sandbox.baseURL)/healthz answered with an HTML page titled “Sign in to Guest Wi-Fi” instead of 204: a captive portal, proxy or another server answers instead of the API"
                    )
            )
        }
    }

    @Test func downIsUnreachableInPlainWords() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"down"}"#)
            guard case .unreachable(let reason) = await Self.probe(sandbox).probe(sandbox.origin, kind: .transient) else {
                Issue.record("a reset probe must be unreachable")
                return
            }
            #expect(reason.contains("127.0.0.1 reset the connection"))
        }
    }

    @Test func anErrorStatusIsUnreachableWithItsText() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"status","status":503,"retryAfter":30,"detail":"Maintenance."}"#)
            guard case .unreachable(let reason) = await Self.probe(sandbox).probe(sandbox.origin, kind: .rateLimited) else {
                Issue.record("a 503 probe must be unreachable")
                return
            }
            #expect(reason.contains("503 Service Unavailable and asked to wait 30 s: Maintenance."))
        }
    }

    @Test func otherHostsAndKindsAreUnsupported() async throws {
        try await LiveSandbox.with { sandbox in
            let probe = Self.probe(sandbox)
            #expect(await probe.probe("other.example.net", kind: .unreachable) == .unsupported)
            #expect(await probe.probe(sandbox.origin, kind: .unauthenticated) == .unsupported)
            #expect(await probe.probe(sandbox.origin, kind: .invalid) == .unsupported)
            #expect(await probe.probe("sync", kind: .fatal) == .unsupported)
        }
    }

    @Test func aFatalScopeAsksItsLocalCheck() async throws {
        try await LiveSandbox.with { sandbox in
            let probe = Self.probe(
                sandbox,
                localChecks: ["sync": { .unreachable(reason: "the outbox's disk has 12 MiB free, less than the 64 MiB needed") }]
            )
            #expect(
                await probe.probe("sync", kind: .fatal)
                    == .unreachable(reason: "the outbox's disk has 12 MiB free, less than the 64 MiB needed")
            )
            #expect(await probe.probe("loader", kind: .fatal) == .unsupported)
        }
    }
}
