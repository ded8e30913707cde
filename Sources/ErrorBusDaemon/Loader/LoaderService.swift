import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import _NIOFileSystem
import ServiceLifecycle

/// Keeps a local copy of each configured remote resource fresh: a conditional `GET` on the
/// resource's interval (`If-None-Match` and `If-Modified-Since` from the copy's `ETag` and
/// `Last-Modified`), the new body written atomically over the old copy, the last good copy kept
/// through every failure.
actor LoaderService: Service {
    /// What the service needs to know, from the daemon's configuration.
    struct Settings: Sendable, Equatable {
        struct Resource: Sendable, Equatable {
            var name: String
            /// Where it is fetched from.
            var url: String
            var interval: Duration
            /// Whether the request carries the API's sign-in: only for a URL on the API's own
            /// origin, so that a credential never goes to another server.
            var signedIn = true

            /// The resource's origin: its scope on the bus.
            var scope: String { RequestTarget(url: url).origin }
        }

        var directory: String
        var resources: [Resource]
        var realm: String
        var requestTimeout: Duration
        /// `api.classify`.
        var classify: [ClassificationOverride] = []
        /// The largest body accepted; a larger one leaves the last good copy in place.
        var maximumSize: Int64 = 64 * 1024 * 1024
    }

    /// Where one resource stands, for status displays.
    struct ResourceState: Sendable, Equatable {
        var lastChecked: Date?
        var lastChanged: Date?
        var etag: String?
        var lastModified: String?
        /// Why the last check failed, and what that leaves: "not refreshed, keeping the last good
        /// copy: …", "never fetched, there is no copy of it: …". `nil` after a check that worked.
        var lastProblem: String?
    }

    /// What one fetch found.
    enum Fetch: Sendable {
        case changed(ResourceValidators, bytes: Int64)
        case unchanged
    }

    static let service = "loader"

    private var settings: Settings
    private let store: JobStore
    private let bus: ErrorBus
    private let auth: AuthService
    private let http: RoutedHTTPClient
    private let logger: Logger
    private let clock: Timeline
    private(set) var states: [String: ResourceState] = [:]
    /// Resources with a loop running.
    private var looping: Set<String> = []
    private let (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    /// - Parameter clock: What the refresh intervals are timed by.
    init(
        settings: Settings,
        store: JobStore,
        bus: ErrorBus,
        auth: AuthService,
        http: RoutedHTTPClient,
        clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger
    ) {
        self.clock = Timeline(clock)
        self.settings = settings
        self.store = store
        self.bus = bus
        self.auth = auth
        self.http = http
        self.logger = logger
    }

    /// Connects the responder that keeps a resource's last good copy when the API says the
    /// request itself is wrong (404, 422…): the next interval asks again, nothing is dead-lettered.
    private func connectResponder() async {
        await bus.connect(ClosureResponder { failure, _ in
            failure.category.kind == .invalid ? .handle(.proceed) : .pass
        }, to: Self.service)
    }

    /// Runs one loop per resource until graceful shutdown; a reload adds or ends loops.
    func run() async throws {
        await connectResponder()
        changed.yield()
        await withDiscardingTaskGroup { group in
            for await _ in changes.cancelOnGracefulShutdown() {
                for resource in settings.resources where !looping.contains(resource.name) {
                    looping.insert(resource.name)
                    group.addTask { await self.keepFresh(resource.name) }
                }
            }
            group.cancelAll()
        }
    }

    /// Applies new settings (a reload): new resources start, removed ones stop.
    func update(_ settings: Settings) {
        self.settings = settings
        changed.yield()
    }

    private func keepFresh(_ name: String) async {
        defer { looping.remove(name) }
        while !Task.isCancelled {
            guard let resource = settings.resources.first(where: { $0.name == name }) else { return }
            await refresh(resource)
            do {
                try await clock.sleep(for: resource.interval)
            } catch {
                return
            }
        }
    }

    /// Fetches one resource through the bus and records the outcome.
    private func refresh(_ resource: Settings.Resource) async {
        let settings = self.settings
        let path = settings.directory + "/" + resource.name
        // Validators only for a copy that is there: a removed copy is fetched whole again.
        let hasCopy = FileManager.default.fileExists(atPath: path)
        let stored = (try? store.validators(forResource: resource.name, url: resource.url)) ?? nil
        let validators = hasCopy ? stored : nil
        let job = Job(
            id: "resources/\(resource.name)",
            service: Self.service,
            scope: resource.scope,
            realm: resource.signedIn ? settings.realm : nil,
            name: resource.name
        )
        let http = self.http
        let auth = self.auth
        var state = states[resource.name] ?? ResourceState()
        state.lastChecked = Date()
        do throws(JobStopped) {
            let fetch = try await bus.perform(job) {
                try await Self.fetch(resource, to: path, validators: validators, settings: settings, http: http, auth: auth)
            }
            if state.lastProblem != nil, case .unchanged = fetch {
                logger.notice("resource \(resource.name) checked again: its copy is up to date")
            }
            state.lastProblem = nil
            if case .changed(let newValidators, let bytes) = fetch {
                state.lastChanged = Date()
                state.etag = newValidators.etag
                state.lastModified = newValidators.lastModified
                try? store.setValidators(newValidators, forResource: resource.name, url: resource.url)
                logger.info("resource \(resource.name) updated (\(bytes) bytes)")
            }
        } catch {
            // Whatever happened, the last good copy stays where it was, if there is one.
            let failure = error.failure.map { "\($0.text.title): \($0.text.message)" } ?? error.description
            let problem =
                if hasCopy {
                    "not refreshed, keeping the last good copy: \(failure)"
                } else if stored == nil && state.lastChanged == nil {
                    "never fetched, there is no copy of it: \(failure)"
                } else {
                    "not fetched again since its copy was removed, there is none: \(failure)"
                }
            if error.reason != .shutdown && error.reason != .taskCancelled {
                // Told once per change of problem, not at every interval.
                if problem != state.lastProblem {
                    logger.warning("resource \(resource.name) \(problem)")
                } else {
                    logger.debug("resource \(resource.name) \(problem)")
                }
                state.lastProblem = problem
            }
        }
        states[resource.name] = state
    }

    /// One conditional `GET`: `304` leaves the copy alone, `200` replaces it atomically.
    private static func fetch(
        _ resource: Settings.Resource,
        to path: String,
        validators: ResourceValidators?,
        settings: Settings,
        http: RoutedHTTPClient,
        auth: AuthService
    ) async throws -> Fetch {
        let (name, url) = (resource.name, resource.url)
        var request = HTTPClientRequest(url: url)
        // Both when both are known: a server that has an ETag compares it and ignores the date
        // (RFC 9110 §13.1.3), one without compares the date.
        if let etag = validators?.etag { request.headers.add(name: "If-None-Match", value: etag) }
        if let lastModified = validators?.lastModified { request.headers.add(name: "If-Modified-Since", value: lastModified) }
        if resource.signedIn {
            try await auth.signIn().apply(to: &request, payloadHash: AWSSignatureV4.emptyPayloadHash)
        }
        let deadline = NIODeadline.now() + TimeAmount(settings.requestTimeout)
        // Any other status is classified, then as the administrator's rules say.
        let response = try await http.execute(request, accepting: [.ok, .notModified], deadline: deadline, overrides: settings.classify).response
        switch response.status {
        case .notModified:
            return .unchanged
        default:
            if let announced = response.headers.first(name: "Content-Length").flatMap(Int64.init), announced > settings.maximumSize {
                throw HTTPFailure.bodyTooLarge(method: "GET", url: url, status: 200, limit: Int(settings.maximumSize), announced: Int(announced))
            }
            let body = response.body
            let limit = settings.maximumSize
            do {
                // The request deadline ends when the head arrives: bound the body's time too.
                let written = try await withThrowingTaskGroup(of: Int64?.self) { group in
                    group.addTask { try await AtomicFile.replace(path, with: body, limit: limit) }
                    group.addTask {
                        try await Task.sleep(for: .nanoseconds(max(0, (deadline - NIODeadline.now()).nanoseconds)))
                        return nil
                    }
                    defer { group.cancelAll() }
                    return try await group.next() ?? nil
                }
                guard let written else {
                    throw HTTPFailure(
                        category: .transient,
                        cause: "deadlineExceeded",
                        method: "GET",
                        url: url,
                        text: OperatorText(title: "API answer too slow", message: "The resource \(name) did not arrive before its deadline; the last good copy stays."),
                        status: 200
                    )
                }
                let validators = ResourceValidators(etag: response.headers.first(name: "ETag"), lastModified: response.headers.first(name: "Last-Modified"))
                return .changed(validators, bytes: written)
            } catch is AtomicFile.TooLarge {
                throw HTTPFailure.bodyTooLarge(method: "GET", url: url, status: 200, limit: Int(limit))
            } catch let failure as HTTPFailure {
                throw failure
            } catch let error as FileSystemError {
                throw LocalWriteFailure(error, path: path)
            } catch let error as SystemCallError {
                throw LocalWriteFailure(error, path: path)
            } catch {
                throw HTTPFailure(classifying: error, method: "GET", url: url)
            }
        }
    }
}

/// The loader could not write a resource's new copy: a `fatal` failure of the loader (disk
/// full, permissions), which pauses it until the condition clears or an operator resumes it.
struct LocalWriteFailure: CategorizedError {
    let path: String
    let detail: String

    init(_ error: any Error, path: String) {
        self.path = path
        self.detail = "\(error)"
    }

    var category: ErrorCategory { .fatal }
    var cause: String { "resourceWriteFailed" }
    var scope: String? { LoaderService.service }
    var operatorText: OperatorText {
        OperatorText(title: "Cannot write resource", message: "Could not write \(path): \(detail)", next: "The last good copy stays; the loader pauses until it can write again.")
    }
}
