public import AsyncHTTPClient
public import ErrorBus
public import Logging
import NIOCore
import NIOHTTP1

/// Tells an `ErrorBus` whether the API answers again, and whether a paused service's local
/// condition has cleared.
///
/// - Network scopes (`unreachable`, `transient`, `rateLimited`; the scope is an origin): the
///   API's origin is probed with `GET` on the probe URL. Exactly `204` is reachable. A redirect, a `200`
///   page or any other answer is something else answering in the API's place (a captive portal,
///   a proxy, a maintenance page) and is reported as unreachable with the reason in plain words.
///   Origins other than the API's are `.unsupported`: only the API's health endpoint is known.
/// - `fatal` scopes (the scope is a service, e.g. `sync`): the local check registered for that
///   service answers (a disk-space or permission check); `.unsupported` without one, so only an
///   operator resumes the service.
/// - Every other kind is `.unsupported`.
///
/// The client must be configured **not to follow redirects**
/// (``AsyncHTTPClient/HTTPClient/Configuration/errorbusAPI(connectTimeout:readTimeout:)`` is):
/// a portal's redirect is the most telling answer there is. A client that follows them still
/// gets an unreachable result (the portal's page is not a 204), with a less precise reason.
public struct APIProbe: ReachabilityProbe {
    /// Where and how to probe.
    public struct Configuration: Sendable, Hashable {
        /// The API's base URL, e.g. `https://api.example.net`; its origin is the scope probed.
        public var baseURL: String
        /// The probe's path under the base URL, or an absolute `http(s)://` URL.
        public var probePath: String
        /// How long one probe may take, answer included.
        public var timeout: Duration
        /// What answer means reachable. Default ``Check/noContent``.
        public var check: Check = .noContent

        /// What the probe asks, and what answer means that the API answers.
        public enum Check: Sendable, Hashable {
            /// `GET` of the probe URL; exactly `204` is reachable.
            case noContent
            /// Object storage speaking the S3 API: `HEAD` of the probe URL, the bucket
            /// (`HeadBucket`), signed by ``APIProbe/signRequest`` when set. `200` is reachable,
            /// and so is a `403` carrying the store's own `x-amz-` headers (it answers, and refuses
            /// the key: the uploads' failures say why); `404` is a bucket that is not there.
            case objectStore
        }

        /// - Parameters:
        ///   - baseURL: the API's base URL, e.g. `https://api.example.net`.
        ///   - probePath: the probe's path under `baseURL`, or an absolute `http(s)://` URL.
        ///   - timeout: how long one probe may take, answer included.
        public init(baseURL: String, probePath: String = "/healthz", timeout: Duration = .seconds(5)) {
            self.baseURL = baseURL
            self.probePath = probePath
            self.timeout = timeout
        }

        /// The URL probed: the base URL without a trailing `/`, then the probe path.
        public var probeURL: String {
            if probePath.contains("://") { return probePath }
            var base = Substring(baseURL)
            while base.hasSuffix("/") { base = base.dropLast() }
            return String(base) + (probePath.hasPrefix("/") ? probePath : "/" + probePath)
        }

        /// The scope network failures of the API are grouped by (``HTTPFailure/origin``).
        public var apiOrigin: String { RequestTarget(url: baseURL).origin }
    }

    /// Checks a local condition for a service's `fatal` incident.
    public typealias LocalCheck = @Sendable () async -> ProbeResult

    /// Where and how it probes.
    public let configuration: Configuration
    /// Signs the probe's request as the API's other requests are (AWS Signature Version 4 for
    /// object storage); `nil` sends it unsigned.
    public var signRequest: (@Sendable (inout HTTPClientRequest) async -> Void)?
    private let client: RoutedHTTPClient
    private let localChecks: [String: LocalCheck]
    private let logger: Logger

    /// - Parameters:
    ///   - configuration: the API's base URL and probe.
    ///   - client: shared clients that do not follow redirects, routed through the proxy if any.
    ///   - localChecks: checks by service name, for `fatal` scopes.
    ///   - logger: where probe results are logged (debug).
    public init(configuration: Configuration, client: RoutedHTTPClient, localChecks: [String: LocalCheck] = [:], logger: Logger) {
        self.configuration = configuration
        self.client = client
        self.localChecks = localChecks
        self.logger = logger
    }

    /// A probe whose requests go through `client`, direct.
    public init(configuration: Configuration, client: HTTPClient, localChecks: [String: LocalCheck] = [:], logger: Logger) {
        self.init(configuration: configuration, client: RoutedHTTPClient(client), localChecks: localChecks, logger: logger)
    }

    /// Whether `scope` answers again, as the bus asks for an incident of `kind`: a `GET` of the
    /// probe URL for the API's origin, the local check for a `fatal` service, `.unsupported`
    /// for anything else.
    public func probe(_ scope: String, kind: ErrorCategory.Kind) async -> ProbeResult {
        switch kind {
        case .unreachable, .transient, .rateLimited:
            guard scope == configuration.apiOrigin else { return .unsupported }
            return await probeAPI()
        case .fatal:
            guard let check = localChecks[scope] else { return .unsupported }
            return await check()
        case .unauthenticated, .invalid:
            return .unsupported
        }
    }

    /// One `GET` of the probe URL.
    private func probeAPI() async -> ProbeResult {
        let url = configuration.probeURL
        let deadline = NIODeadline.now() + .nanoseconds(Int64(configuration.timeout / .nanoseconds(1)))
        let started = ContinuousClock.now
        let result: ProbeResult
        var request = HTTPClientRequest(url: url)
        if configuration.check == .objectStore { request.method = .HEAD }
        await signRequest?(&request)
        do {
            let response = try await client.execute(request, deadline: deadline, logger: logger)
            switch configuration.check {
            case .noContent: result = await Self.judge(response, url: url, deadline: deadline)
            case .objectStore: result = await Self.judgeObjectStore(response, url: url, deadline: deadline)
            }
        } catch {
            result = .unreachable(reason: HTTPFailure(classifying: error, method: request.method.rawValue, url: url).operatorText.message)
        }
        logger.debug(
            "API probe answered",
            metadata: [
                "errorbus.probe.url": "\(url)",
                "errorbus.probe.result": "\(result)",
                "errorbus.probe.duration": "\(ContinuousClock.now - started)",
            ]
        )
        return result
    }

    /// What an object store's answer to `HEAD` of the bucket means.
    private static func judgeObjectStore(_ response: HTTPClientResponse, url: String, deadline: NIODeadline) async -> ProbeResult {
        _ = try? await response.collectBody(upTo: 16 * 1024, deadline: deadline, method: "HEAD", url: url)
        let status = Int(response.status.code)
        let fromTheStore = response.headers.contains { $0.name.lowercased().hasPrefix("x-amz") }
        switch status {
        case 200:
            return .reachable
        case 403 where fromTheStore:
            return .reachable
        case 404 where fromTheStore:
            return .unreachable(reason: "\(url) answered HEAD with 404: the store has no such bucket")
        case 300...399 where status != 304:
            let location = response.headers.first(name: "Location") ?? "nowhere (no Location)"
            return .unreachable(reason: "HEAD \(url) was redirected to \(location): another region's endpoint, a captive portal or a proxy answers")
        default:
            let failure = HTTPFailure(status: status, headers: response.headers, body: nil, method: "HEAD", url: url)
            return .unreachable(reason: failure.operatorText.message + (fromTheStore ? "" : " (no x-amz- header: not the object store's answer)"))
        }
    }

    /// What an answer to the probe means. Its body is read (a little of it, within the
    /// deadline) so the connection can serve the next probe and a page can be named.
    private static func judge(_ response: HTTPClientResponse, url: String, deadline: NIODeadline) async -> ProbeResult {
        let status = Int(response.status.code)
        let body = try? await response.collectBody(upTo: 16 * 1024, deadline: deadline, method: "GET", url: url)
        switch status {
        case 204:
            return .reachable
        case 300...399 where status != 304:
            let location = response.headers.first(name: "Location") ?? "nowhere (no Location)"
            return .unreachable(reason: "redirected to \(location): a captive portal or proxy answers instead of the API")
        case 200:
            let contentType = response.headers.first(name: "Content-Type")
            var page = "a page"
            if let contentType, MediaType.isHTML(contentType) {
                page = HTMLTitle.find(in: body.map { Array($0.readableBytesView) } ?? []).map { "an HTML page titled “\($0)”" } ?? "an HTML page"
            } else if let contentType {
                page = "a \(MediaType.essence(of: contentType)) page"
            }
            return .unreachable(reason: "\(url) answered with \(page) instead of 204: a captive portal, proxy or another server answers instead of the API")
        default:
            let failure = HTTPFailure(status: status, headers: response.headers, body: body, method: "GET", url: url)
            return .unreachable(reason: failure.operatorText.message)
        }
    }
}
