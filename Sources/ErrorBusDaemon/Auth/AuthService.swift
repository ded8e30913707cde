import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
import ErrorBusSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Signs errorbusd's requests in to the API, by the configured method, and is the bus's
/// ``Authenticator`` for the API's realm.
///
/// With `oauth2-client-credentials` it holds the access token of the client-credentials grant
/// (RFC 6749 §4.4): fetched at start, renewed before it expires, renewed once for the whole realm
/// when the API rejects it. `bearer` and `basic` send a static credential, and `mtls` signs in
/// by the TLS client certificate the HTTP client holds: for those a refusal cannot be healed by
/// asking again, so the realm's incident waits for an operator's new credential (a reload, or a
/// restart for a systemd credential or a certificate).
///
/// It has no retry of its own. A token request that fails is answered to whoever needed the
/// token: an upload rethrows the endpoint's failure (so an outage of the token endpoint parks it
/// in its host's incident) or, when the credentials were refused, fails `unauthenticated` for the
/// realm, whose incident asks ``reauthenticate(realm:)`` once and, refused again, waits for an
/// operator instead of looping. The token request itself never waits in the bus: requests that
/// need a token would otherwise wait on a request parked behind them.
actor AuthService: Authenticator, Service {
    /// What the service needs to know, from the daemon's configuration.
    struct Settings: Sendable, Equatable {
        typealias Method = DaemonConfiguration.Auth.Method

        var method: Method = .oauth2ClientCredentials
        var tokenURL: String
        var host: String
        var realm: String
        var clientID: String
        /// The method's secret: the client secret, the bearer token or the basic password.
        var secret: String
        /// `basic`'s user.
        var user: String? = nil
        /// `aws-sigv4`'s signer: the access key, its secret, and what it signs for.
        var signing: AWSSignatureV4? = nil
        /// `aws-sigv4`: the files its secret and session token were read from (`-file` keys),
        /// read again when the store says the session has expired; `nil` for a credential, which
        /// systemd copied at start.
        var secretAccessKeyFile: String? = nil
        var sessionTokenFile: String? = nil
        /// What an operator does about a refused secret, where it came from: a credential needs a
        /// restart, a file a reload.
        var secretFix: String
        var refreshMargin: Duration
        var requestTimeout: Duration
    }

    /// The current access token.
    struct Token: Sendable {
        let value: String
        /// When it was asked for: its lifetime counts from then.
        let sentAt: TimelineInstant
        let expiresAt: TimelineInstant

        /// When to renew it: `margin` before it expires, and a random part of another `margin`
        /// earlier still (at most what its lifetime leaves), so that hosts started together,
        /// whose tokens expire together, do not all ask the token endpoint at once.
        func renewal(margin: Duration, using random: inout some RandomNumberGenerator) -> TimelineInstant {
            let latest = expiresAt.advanced(by: .zero - margin)
            let room = max(.zero, min(margin, sentAt.duration(to: latest)))
            return latest.advanced(by: .zero - .seconds(Double.random(in: 0...room.timeInterval, using: &random)))
        }
    }

    /// The outcome of one attempt to get a token.
    enum Attempt: Sendable {
        case token(Token)
        /// The endpoint refused the client's credentials: asking again cannot help.
        case rejected(OperatorText)
        /// The endpoint could not be asked or answered nonsense: the failure, and what it means.
        case unavailable(any Error, reason: String)
    }

    private var settings: Settings
    private let http: RoutedHTTPClient
    private let bus: ErrorBus
    private let logger: Logger
    private let clock: Timeline
    private var random = SystemRandomNumberGenerator()
    /// When the current token is renewed (``Token/renewal(margin:using:)``), drawn once per token.
    private var renewAt: TimelineInstant?
    private var token: Token?
    /// Whether the refusal of the current credentials has been logged.
    private var rejectionLogged = false
    /// Callers waiting for the refresh under way; `nil` when none is.
    private var waiters: [CheckedContinuation<Attempt, Never>]?
    /// One element per token obtained, however it was asked for.
    private let (renewals, renewed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    /// - Parameter clock: What the token's lifetime and its refresh are timed by.
    init(settings: Settings, http: RoutedHTTPClient, bus: ErrorBus, clock: some Clock<Duration> = ContinuousClock(), logger: Logger) {
        self.clock = Timeline(clock)
        self.settings = settings
        self.http = http
        self.bus = bus
        self.logger = logger
    }

    static let service = "auth"

    /// Keeps the token fresh until graceful shutdown: a first token at start, then a new one
    /// between `refreshMargin` and twice that before the current one expires.
    func run() async throws {
        try await untilGracefulShutdown { try await self.keepFresh() }
    }

    private func keepFresh() async throws {
        var tokens = renewals.makeAsyncIterator()
        while !Task.isCancelled {
            guard settings.method == .oauth2ClientCredentials else {
                // Nothing to renew. A new credential from a reload lets the work go that waited
                // for an operator.
                guard await tokens.next(isolation: self) != nil else { return }
                if settings.method != .oauth2ClientCredentials {
                    await bus.credentialsRenewed(realm: settings.realm)
                }
                continue
            }
            if token != nil, let renewAt, clock.now() < renewAt {
                try await clock.sleep(renewAt)
                continue
            }
            if case .token = await refresh() {
                // Work that waited for an operator after rejected credentials can go.
                await bus.credentialsRenewed(realm: settings.realm)
                continue
            }
            // No retry here: the next request that needs a token asks again, and its failure
            // goes through the bus. Wait for a token however it comes.
            _ = await tokens.next(isolation: self)
        }
    }

    /// A valid access token for a request, fetching one if there is none or it has expired.
    ///
    /// - Throws: the token endpoint's failure when it could not be asked, or
    ///   ``TokenUnavailable`` (an `unauthenticated` failure of the realm) when it refused the
    ///   credentials.
    func accessToken() async throws -> String {
        if let token, clock.now() < token.expiresAt {
            return token.value
        }
        switch await refresh() {
        case .token(let token): return token.value
        case .rejected(let text): throw TokenUnavailable(realm: settings.realm, reason: text.message)
        case .unavailable(let failure, _): throw failure
        }
    }

    /// How a request signs in: the method's `Authorization` header, or, for `aws-sigv4`, a
    /// signature over the whole request; neither for `mtls` (the TLS client certificate) and
    /// `none`.
    struct SignIn: Sendable, Equatable {
        var authorization: String?
        var signer: AWSSignatureV4?

        /// Whether a request carries anything of it.
        var isEmpty: Bool { authorization == nil && signer == nil }

        /// Signs `request` in, once its other headers are set (a signature covers them);
        /// `payloadHash` is its body's SHA-256 (hex), for a signature.
        func apply(to request: inout HTTPClientRequest, payloadHash: String) {
            if let authorization { request.headers.replaceOrAdd(name: "Authorization", value: authorization) }
            signer?.sign(&request, payloadHash: payloadHash)
        }
    }

    /// The sign-in for a request; with `oauth2-client-credentials`, ``accessToken()``'s, fetched
    /// if there is none or it has expired.
    func signIn() async throws -> SignIn {
        switch settings.method {
        case .oauth2ClientCredentials: SignIn(authorization: "Bearer \(try await accessToken())")
        default: currentSignIn
        }
    }

    /// The sign-in held now, without fetching a token.
    var currentSignIn: SignIn {
        switch settings.method {
        case .oauth2ClientCredentials: SignIn(authorization: token.map { "Bearer \($0.value)" })
        case .awsSigV4: SignIn(signer: settings.signing)
        default: SignIn(authorization: staticAuthorization)
        }
    }

    private var staticAuthorization: String? {
        switch settings.method {
        case .bearer: "Bearer \(settings.secret)"
        case .basic: "Basic " + Data("\(settings.user ?? ""):\(settings.secret)".utf8).base64EncodedString()
        case .oauth2ClientCredentials, .mtls, .awsSigV4, .none: nil
        }
    }

    /// The bus's re-authentication: a new token, whatever the current one's expiry says; for a
    /// static credential, which asking again cannot change, the operator's task.
    func reauthenticate(realm: String) async -> ReauthenticationResult {
        let host = settings.host
        // Behind a proxy that refuses errorbusd's sign-in, no sign-in to the API gets through.
        if let refused = await http.proxyRefusesSignIn(to: settings.tokenURL) {
            return .rejected(refused.operatorText)
        }
        switch settings.method {
        case .oauth2ClientCredentials:
            token = nil
            switch await refresh() {
            case .token: return .renewed
            case .rejected(let text): return .rejected(text)
            case .unavailable(_, let reason): return .unavailable(reason: reason)
            }
        case .bearer, .basic:
            let what = settings.method == .bearer ? "bearer token" : "password of user \"\(settings.user ?? "")\""
            return .rejected(OperatorText(
                title: "Credentials rejected",
                message: "\(host) refused the \(what) errorbusd signs in with (auth.method \(settings.method.rawValue)); asking again cannot help.",
                next: "\(settings.secretFix); waiting work resumes then."
            ))
        case .awsSigV4:
            let key = settings.signing?.credentials.accessKeyID ?? ""
            // Temporary credentials are renewed by whatever writes their files (a credential
            // helper): new ones there are a new sign-in.
            if var signing = settings.signing, let renewed = Self.reread(signing.credentials, settings), renewed != signing.credentials {
                signing.credentials = renewed
                settings.signing = signing
                logger.notice("signing with the credentials read again from \([settings.secretAccessKeyFile, settings.sessionTokenFile].compactMap { $0 }.joined(separator: " and "))")
                return .renewed
            }
            return .rejected(OperatorText(
                title: "Signature refused",
                message: "\(host) refused requests signed with access key \(key) (auth.method aws-sigv4); signing again with the same key cannot help.",
                next: "Check auth.access-key-id and auth.region; \(settings.secretFix.prefix(1).lowercased() + settings.secretFix.dropFirst()); waiting work resumes then."
            ))
        case .mtls:
            return .rejected(OperatorText(
                title: "Client certificate refused",
                message: "\(host) refused the TLS client certificate errorbusd signs in with (auth.method mtls).",
                next: "\(settings.secretFix); waiting work resumes then."
            ))
        case .none:
            return .rejected(OperatorText(
                title: "Sign-in required",
                message: "\(host) asks for credentials, but auth.method is none.",
                next: "Set auth.method and its credentials, then reload errorbusd; waiting work resumes then."
            ))
        }
    }

    /// `credentials` with the secret and the session token read again from their files, when
    /// they come from files; `nil` when there is nothing to read or it cannot be read.
    private static func reread(_ credentials: AWSSignatureV4.Credentials, _ settings: Settings) -> AWSSignatureV4.Credentials? {
        guard settings.secretAccessKeyFile != nil || settings.sessionTokenFile != nil else { return nil }
        let reader = CredentialReader()
        var renewed = credentials
        typealias Kind = DaemonConfiguration.Auth.SecretKind
        do {
            if let file = settings.secretAccessKeyFile {
                let kind = Kind.secretAccessKey
                renewed.secretAccessKey = try reader.read(file: file, fileKey: kind.fileKey, credential: kind.rawValue, credentialKey: kind.fileKey, what: kind.what).0.value
            }
            if let file = settings.sessionTokenFile {
                let kind = Kind.sessionToken
                renewed.sessionToken = try reader.read(file: file, fileKey: kind.fileKey, credential: kind.rawValue, credentialKey: kind.fileKey, what: kind.what).0.value
            }
        } catch {
            return nil
        }
        return renewed
    }

    /// Applies new settings (a reload). New credentials or a new endpoint mean a new token.
    func update(_ settings: Settings) {
        guard settings != self.settings else { return }
        let credentialsChanged = settings.method != self.settings.method
            || settings.clientID != self.settings.clientID
            || settings.secret != self.settings.secret
            || settings.user != self.settings.user
            || settings.signing != self.settings.signing
            || settings.tokenURL != self.settings.tokenURL
        self.settings = settings
        if credentialsChanged {
            token = nil
            rejectionLogged = false
            // Ask at once: work waiting for an operator after refused credentials may now go.
            renewed.yield()
        }
    }

    /// Gets a new token, once for all concurrent callers.
    private func refresh() async -> Attempt {
        if waiters != nil {
            return await withCheckedContinuation { waiters?.append($0) }
        }
        waiters = []
        let attempt = await fetch(settings)
        let waiting = waiters ?? []
        waiters = nil
        switch attempt {
        case .token(let token):
            self.token = token
            renewAt = token.renewal(margin: settings.refreshMargin, using: &random)
            rejectionLogged = false
            renewed.yield()
            logger.debug("access token renewed", metadata: ["expires_in": "\(clock.now().duration(to: token.expiresAt))"])
        case .rejected(let text):
            // Once until a token is issued: the realm's incident tells the rest of the story.
            if !rejectionLogged {
                rejectionLogged = true
                logger.error("\(text.title): \(text.message) \(text.next ?? "")")
            }
        case .unavailable(_, let reason):
            logger.warning("no access token: \(reason)")
        }
        for waiter in waiting { waiter.resume(returning: attempt) }
        return attempt
    }

    /// One token request, bounded by the request timeout.
    private func fetch(_ settings: Settings) async -> Attempt {
        do {
            return .token(try await Self.requestToken(settings, http: http, clock: clock))
        } catch let failure as HTTPFailure where failure.cause == "proxyAuthenticationRequired" {
            // The proxy's sign-in, not the client's: the incident is the proxy's.
            return .unavailable(failure, reason: failure.operatorText.message)
        } catch let failure as HTTPFailure where [.unauthenticated, .invalid].contains(failure.category.kind) {
            // 400 invalid_client, 401: the endpoint refused the client itself.
            return .rejected(OperatorText(
                title: "Credentials rejected",
                message: "The token endpoint \(settings.tokenURL) refused client \"\(settings.clientID)\": \(failure.operatorText.message)",
                next: "\(settings.secretFix); waiting work resumes once a token is issued."
            ))
        } catch let failure as any CategorizedError {
            return .unavailable(failure, reason: failure.operatorText.message)
        } catch {
            return .unavailable(error, reason: "\(error)")
        }
    }

    /// `POST` to the token endpoint with HTTP Basic client authentication (RFC 6749 §2.3.1).
    private static func requestToken(_ settings: Settings, http: RoutedHTTPClient, clock: Timeline) async throws -> Token {
        var request = HTTPClientRequest(url: settings.tokenURL)
        request.method = .POST
        let credentials = Data("\(formEncoded(settings.clientID)):\(formEncoded(settings.secret))".utf8).base64EncodedString()
        request.headers.add(name: "Authorization", value: "Basic \(credentials)")
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: "grant_type=client_credentials"))
        let sent = clock.now()
        let deadline = NIODeadline.now() + TimeAmount(settings.requestTimeout)
        let answer = try await http.execute(request, accepting: [.ok], deadline: deadline)
        let decoded = try await answer.decodeBody(as: TokenResponse.self, expected: "an OAuth token response") {
            $0.tokenType.lowercased() == "bearer" && !$0.accessToken.isEmpty ? nil : "a bearer token"
        }
        // Count the lifetime from when the request was sent: never trust a token past its time.
        return Token(value: decoded.accessToken, sentAt: sent, expiresAt: sent.advanced(by: .seconds(max(0, decoded.expiresIn ?? 3_600))))
    }

    /// `application/x-www-form-urlencoded` for client credentials, as RFC 6749 §2.3.1 asks.
    private static func formEncoded(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}

/// An access token response (RFC 6749 §5.1).
struct TokenResponse: Decodable {
    let accessToken: String
    let tokenType: String
    let expiresIn: Int?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
    }
}

/// No access token could be had: an `unauthenticated` failure of the realm.
struct TokenUnavailable: CategorizedError {
    let realm: String
    let reason: String

    var category: ErrorCategory { .unauthenticated }
    var cause: String { "noToken" }
    var scope: String? { realm }
    var operatorText: OperatorText {
        OperatorText(title: "No access token", message: "No access token for \(realm): \(reason)")
    }
}
