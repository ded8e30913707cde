public import AsyncHTTPClient
public import Logging
public import NIOCore
public import NIOHTTP1
import NIOPosix

/// HTTP clients for every route of ``ProxyRoutes``: one direct, one per proxy; a request goes
/// through the one its URL's scheme and host choose.
///
/// Its failures say when the proxy, not the server, is the matter: a proxy that cannot be
/// reached is `unreachable` at the proxy's origin, a `407` needs the proxy's sign-in fixed
/// (`unauthenticated`), and a tunnel the proxy refuses (`403`) or cannot open (`502`, `503`)
/// is told with the proxy's own status.
///
/// ```swift
/// let routes = try ProxyRoutes(environment: ProcessInfo.processInfo.environment)
/// let client = RoutedHTTPClient(configuration: .errorbusAPI(), routes: routes)
/// let answer = try await client.execute(request, accepting: [.created], deadline: .now() + .seconds(30))
/// ```
public final class RoutedHTTPClient: Sendable {
    /// The routes requests take.
    public let routes: ProxyRoutes
    private let direct: HTTPClient
    private let proxied: [HTTPProxy: HTTPClient]
    private let owned: Bool

    /// Clients for `routes`, each with `configuration` (and its proxy); ``shutdown()`` stops them.
    public init(configuration: HTTPClient.Configuration, routes: ProxyRoutes, eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup) {
        self.routes = routes
        self.direct = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration)
        var proxied: [HTTPProxy: HTTPClient] = [:]
        for proxy in [routes.https, routes.http].compactMap({ $0 }) where proxied[proxy] == nil {
            var through = configuration
            through.proxy = proxy.configuration
            proxied[proxy] = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: through)
        }
        self.proxied = proxied
        self.owned = true
    }

    /// Every request through `client`, direct; ``shutdown()`` leaves it to its owner.
    public init(_ client: HTTPClient) {
        self.routes = .direct
        self.direct = client
        self.proxied = [:]
        self.owned = false
    }

    /// The client a request to `url` goes through, and its proxy (`nil`: direct).
    public func route(for url: String) -> (client: HTTPClient, proxy: HTTPProxy?) {
        guard let proxy = routes.proxy(for: url), let client = proxied[proxy] else { return (direct, nil) }
        return (client, proxy)
    }

    /// Executes `request` on its route. An error on the way to the server through a proxy
    /// is thrown as a ``ProxiedRequestError`` (``HTTPFailure/init(classifying:method:url:)`` reads
    /// it); any other error as it was thrown.
    public func execute(_ request: HTTPClientRequest, deadline: NIODeadline, logger: Logger? = nil) async throws -> HTTPClientResponse {
        let (client, proxy) = route(for: request.url)
        do {
            if let logger { return try await client.execute(request, deadline: deadline, logger: logger) }
            return try await client.execute(request, deadline: deadline)
        } catch {
            guard let proxy, let proxied = await ProxiedRequestError(error, proxy: proxy, url: request.url, deadline: deadline) else { throw error }
            throw proxied
        }
    }

    /// ``execute(_:deadline:logger:)`` within `timeout`.
    public func execute(_ request: HTTPClientRequest, timeout: TimeAmount, logger: Logger? = nil) async throws -> HTTPClientResponse {
        try await execute(request, deadline: .now() + timeout, logger: logger)
    }

    /// Executes `request` on its route and hands back its answer if its status is one of
    /// `accepted`; otherwise throws what went wrong, classified, as
    /// `HTTPClient.execute(_:accepting:deadline:overrides:logger:)` does.
    public func execute(
        _ request: HTTPClientRequest,
        accepting accepted: [HTTPResponseStatus],
        deadline: NIODeadline,
        overrides: [ClassificationOverride] = [],
        logger: Logger? = nil
    ) async throws(HTTPFailure) -> AcceptedResponse {
        let method = request.method.rawValue
        let url = request.url
        let response: HTTPClientResponse
        do {
            response = try await execute(request, deadline: deadline, logger: logger)
        } catch {
            throw HTTPFailure(classifying: error, method: method, url: url)
        }
        guard accepted.contains(where: { $0.code == response.status.code }) else {
            throw await HTTPFailure.classifying(response, method: method, url: url, deadline: deadline).overridden(by: overrides)
        }
        return AcceptedResponse(response: response, method: method, url: url, deadline: deadline)
    }

    /// The proxy's refusal of this client's sign-in on the way to `url` (a `407` to a
    /// `CONNECT`), asked of it now; `nil` when the URL goes direct or the proxy lets it through.
    /// What re-authenticating behind a proxy asks first: a new API token cannot help then.
    public func proxyRefusesSignIn(to url: String, timeout: TimeAmount = .seconds(5)) async -> HTTPFailure? {
        guard let proxy = routes.proxy(for: url) else { return nil }
        let target = RequestTarget(url: url)
        let status = await ProxiedRequestError.tunnelStatus(through: proxy, to: target.host, port: target.port ?? 443, deadline: .now() + timeout)
        guard status == 407 else { return nil }
        let refused = ProxiedRequestError(proxy: proxy, step: .signIn, underlying: HTTPClientError.proxyAuthenticationRequired)
        return HTTPFailure(refused, method: "CONNECT", url: url)
    }

    /// Stops the clients this made.
    public func shutdown() async throws {
        guard owned else { return }
        for client in proxied.values { try await client.shutdown() }
        try await direct.shutdown()
    }
}

/// A request that failed on its way through a proxy, before the server answered: the proxy
/// could not be reached, refused the sign-in, or would not open the tunnel.
public struct ProxiedRequestError: Error, Sendable {
    /// What failed.
    public enum Step: Sendable, Equatable {
        /// Connecting to the proxy (refused, timed out, no route, its name unknown).
        case connect
        /// The proxy asked for a sign-in it did not get or refused (`407`).
        case signIn
        /// The proxy answered `CONNECT` with this status (`403` its rules refuse the host; `502`,
        /// `503`, `504` it could not reach the server); `nil` when it did not say.
        case tunnel(status: Int?)
    }

    /// The proxy.
    public var proxy: HTTPProxy
    /// Where on the way it failed.
    public var step: Step
    /// The error AsyncHTTPClient or SwiftNIO threw.
    public var underlying: any Error

    public init(proxy: HTTPProxy, step: Step, underlying: any Error) {
        self.proxy = proxy
        self.step = step
        self.underlying = underlying
    }

    /// The proxy's part in `error`, or `nil` when the error is past the proxy (the server's own,
    /// through the tunnel). A refused tunnel is asked again of the proxy, once, to learn its
    /// status, which AsyncHTTPClient does not keep.
    init?(_ error: any Error, proxy: HTTPProxy, url: String, deadline: NIODeadline) async {
        let clientError = error as? HTTPClientError
        if clientError == .proxyAuthenticationRequired {
            self.init(proxy: proxy, step: .signIn, underlying: error)
        } else if clientError == .invalidProxyResponse {
            let target = RequestTarget(url: url)
            let status = await Self.tunnelStatus(through: proxy, to: target.host, port: target.port ?? 443, deadline: deadline)
            self.init(proxy: proxy, step: status == 407 ? .signIn : .tunnel(status: status), underlying: error)
        } else if clientError == .httpProxyHandshakeTimeout || clientError == .connectTimeout || error is NIOConnectionError
            || { if case .connectTimeout = error as? ChannelError { true } else { false } }() || (error as? IOError).map({ Self.connectErrors.contains($0.errnoCode) }) == true {
            self.init(proxy: proxy, step: .connect, underlying: error)
        } else {
            return nil
        }
    }

    private static let connectErrors: Set<CInt> = [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ENETDOWN, EADDRNOTAVAIL, ETIMEDOUT]

    /// The status `proxy` answers a `CONNECT` to `host:port` with; `nil` when it gives none
    /// before the deadline (or 5 s).
    static func tunnelStatus(through proxy: HTTPProxy, to host: String, port: Int, deadline: NIODeadline) async -> Int? {
        let limit = min(deadline, .now() + .seconds(5))
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(max(.zero, limit - .now()))
                .connect(host: proxy.host, port: proxy.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                    }
                }
            let timeout = channel.channel.eventLoop.scheduleTask(deadline: limit) { channel.channel.close(promise: nil) }
            defer { timeout.cancel() }
            return try await channel.executeThenClose { inbound, outbound in
                var head = HTTPRequestHead(version: .http1_1, method: .CONNECT, uri: authority)
                head.headers.add(name: "Host", value: authority)
                if let user = proxy.user {
                    head.headers.add(name: "Proxy-Authorization", value: HTTPClient.Authorization.basic(username: user, password: proxy.password ?? "").headerValue)
                }
                try await outbound.write(.head(head))
                try await outbound.write(.end(nil))
                for try await part in inbound {
                    if case .head(let response) = part { return Int(response.status.code) }
                }
                return nil
            }
        } catch {
            return nil
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
