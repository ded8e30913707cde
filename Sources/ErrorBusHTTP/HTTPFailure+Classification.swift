import ErrorBusUnits
import AsyncHTTPClient
import ErrorBus
import ErrorBusSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

extension HTTPFailure {
    /// Classifies an error AsyncHTTPClient or SwiftNIO threw for a request, before or while its
    /// answer arrived.
    ///
    /// | error | category | cause |
    /// |---|---|---|
    /// | name does not resolve (`NIOConnectionError` with only DNS errors, `SocketAddressError.UnknownHost`) | unreachable | `dnsFailure` |
    /// | `ECONNREFUSED` | unreachable | `connectionRefused` |
    /// | `EHOSTUNREACH`, `ENETUNREACH`, `ENETDOWN`, `EADDRNOTAVAIL` | unreachable | `hostUnreachable`, `networkUnreachable`, `networkDown`, `noLocalAddress` |
    /// | connect timeout (`HTTPClientError.connectTimeout`, `ChannelError.connectTimeout`, `ETIMEDOUT`) | unreachable | `connectTimeout` |
    /// | certificate not trusted: unknown CA, expired, wrong name | unreachable | `untrustedCertificate` |
    /// | the server's alert about the client certificate (required, bad, unknown CA, expired…) | unauthenticated | `clientCertificateRefused` |
    /// | other TLS handshake failure, TLS handshake timeout | unreachable | `tlsFailure`, `tlsHandshakeTimeout` |
    /// | a proxy refuses or fails (`proxyAuthenticationRequired`, `invalidProxyResponse`, proxy handshake timeouts) | unreachable | `proxyFailure` |
    /// | a ``ProxiedRequestError`` (``RoutedHTTPClient``): the proxy unreachable; a `407`; `CONNECT` refused; the server unreachable from the proxy | unreachable; unauthenticated; unreachable; unreachable | `proxyUnreachable` (scope the proxy's origin); `proxyAuthenticationRequired`; `proxyRefused`; `proxyBadGateway` |
    /// | redirect loop or limit (a client that follows redirects) | unreachable | `captivePortal` |
    /// | TLS files unusable (CA, certificate or key not found or not loadable) | fatal | `tlsConfiguration` |
    /// | URL unusable (`invalidURL`, `emptyHost`, `emptyScheme`, `unsupportedScheme`) | fatal | `invalidURL` |
    /// | client already shut down | fatal | `clientShutDown` |
    /// | read timeout, deadline exceeded, write timeout | transient | `readTimeout`, `deadlineExceeded`, `writeTimeout` |
    /// | `ECONNRESET`, `EPIPE`, `ECONNABORTED`, remote closed, truncated body (`invalidEOFState`), TLS unclean shutdown | transient | `connectionReset` |
    /// | not HTTP (`HTTPParserError`) | transient | `malformedResponse` |
    /// | pool timeout, cancelled | transient | `connectionPoolTimeout`, `cancelled` |
    /// | invalid header names or values, body length mismatch | invalid | `invalidRequest` |
    /// | body over the limit (`NIOTooManyBytesError`) | invalid | `bodyTooLarge` |
    /// | `DecodingError` | invalid | `undecodableResponse` |
    /// | an ``HTTPFailure`` | itself | itself |
    /// | anything else | transient | the error's type name |
    ///
    /// Why an untrusted certificate is `unreachable` and not `fatal`: on a laptop or a branch
    /// office host it is almost always something answering in the API's place (a captive portal
    /// or an intercepting proxy); the reachability gate parks the work and releases it once the
    /// probe gets a trusted answer again. A CA file that cannot be loaded is a local
    /// misconfiguration: `fatal`, which pauses the service until an operator fixes it.
    public init(classifying error: any Error, method: String, url: String) {
        if let failure = error as? HTTPFailure {
            self = failure
            return
        }
        let target = RequestTarget(url: url)
        if let proxied = error as? ProxiedRequestError {
            self.init(proxied, method: method, url: url)
            return
        }
        let diagnosis = Diagnosis(error, target: target, request: "\(method) \(target.pathAndQuery)")
        self.init(
            category: diagnosis.category,
            cause: diagnosis.cause,
            method: method,
            url: url,
            text: OperatorText(title: diagnosis.title, message: diagnosis.message, next: diagnosis.next),
            underlying: error
        )
    }
}

/// What an error means, in the words of ``HTTPFailure``.
private struct Diagnosis {
    var category: ErrorCategory
    var cause: String
    var title: String
    var message: String
    var next: String?

    private static let portalAdvice =
        "Work for it waits; if this host must sign in to its network (a hotel or guest Wi-Fi) or goes through a proxy, sign in or fix the proxy, and the work resumes once a probe reaches the API itself."

    init(category: ErrorCategory, cause: String, title: String, message: String, next: String? = nil) {
        self.category = category
        self.cause = cause
        self.title = title
        self.message = message
        self.next = next
    }

    init(_ error: any Error, target: RequestTarget, request: String) {
        let host = target.host
        let authority = target.authority
        switch error {
        case let error as HTTPClientError:
            self = Self.diagnose(error, target: target, request: request)
        case let error as NIOConnectionError:
            self = Self.diagnose(error, target: target, request: request)
        case let error as SocketAddressError.UnknownHost:
            self = Self.dnsFailure(host: host, detail: error.errorDescription)
        case let error as IOError:
            self = Self.diagnose(errno: error.errnoCode, target: target, request: request)
        case let error as ChannelError:
            self = Self.diagnose(error, target: target, request: request)
        case let error as HTTPParserError:
            if case .invalidEOFState = error {
                self = Self.connectionReset(host: host, request: request, how: "closed the connection before the answer was complete (the body was cut short)")
            } else {
                self.init(
                    category: .transient,
                    cause: "malformedResponse",
                    title: "Answer is not HTTP",
                    message: "\(authority) answered \(request) with something that is not valid HTTP (\(error)): a proxy or another service may be answering in the API's place."
                )
            }
        case let error as NIOSSLError:
            self = Self.diagnose(error, target: target, request: request)
        case let error as NIOSSLExtraError:
            self = Self.diagnose(error, target: target)
        case let error as BoringSSLError:
            // TLS 1.3 sends the server's verdict on the client certificate after the client's
            // handshake ended: its alert arrives as a read error, not a handshake failure.
            self = Self.clientCertificateRefusal(String(describing: error), target: target)
                ?? Diagnosis(
                    category: .unreachable,
                    cause: "tlsFailure",
                    title: "TLS failed",
                    message: "TLS with \(target.authority) failed: \(String(describing: error).prefix(200)).",
                    next: Self.portalAdvice
                )
        case let error as NIOTooManyBytesError:
            let limit = error.maxBytes.map { " \(ByteCountText.format($0))" } ?? ""
            self.init(
                category: .invalid(reason: "answer larger than the\(limit) limit"),
                cause: "bodyTooLarge",
                title: "Answer too large",
                message: "\(host) answered \(request) with a body larger than the\(limit) this request allows; it was not read further."
            )
        case let error as DecodingError:
            self.init(
                category: .invalid(reason: "answer could not be decoded"),
                cause: "undecodableResponse",
                title: "Answer not understood",
                message: "\(host) answered \(request) with a body that could not be decoded (\(String(describing: error).prefix(200)))."
            )
        case is CancellationError:
            self = Self.cancelled(request: request)
        default:
            self.init(
                category: .transient,
                cause: String(describing: type(of: error)),
                title: "Request failed",
                message: "\(request) to \(authority) failed: \(String(describing: error).prefix(200))."
            )
        }
    }

    // MARK: - AsyncHTTPClient

    private static func diagnose(_ error: HTTPClientError, target: RequestTarget, request: String) -> Diagnosis {
        let host = target.host
        let authority = target.authority
        switch error {
        case .connectTimeout:
            return connectTimeout(authority: authority)
        case .readTimeout:
            return Diagnosis(
                category: .transient,
                cause: "readTimeout",
                title: "API answer too slow",
                message: "\(host) went silent for longer than the read timeout while answering \(request)."
            )
        case .deadlineExceeded:
            return Diagnosis(
                category: .transient,
                cause: "deadlineExceeded",
                title: "API answer too slow",
                message: "\(host) did not answer \(request) before its deadline."
            )
        case .writeTimeout:
            return Diagnosis(
                category: .transient,
                cause: "writeTimeout",
                title: "Upload stalled",
                message: "\(host) stopped accepting the body of \(request) for longer than its timeout."
            )
        case .remoteConnectionClosed:
            return connectionReset(host: host, request: request, how: "closed the connection before answering")
        case .tlsHandshakeTimeout:
            return Diagnosis(
                category: .unreachable,
                cause: "tlsHandshakeTimeout",
                title: "API not answering",
                message: "\(authority) accepted a connection but did not complete the TLS handshake in time."
            )
        case .proxyAuthenticationRequired:
            return proxyFailure(authority: authority, detail: "the proxy requires authentication (407)")
        case .invalidProxyResponse:
            return proxyFailure(authority: authority, detail: "the proxy answered the CONNECT request with an error")
        case .httpProxyHandshakeTimeout, .socksHandshakeTimeout:
            return proxyFailure(authority: authority, detail: "the proxy did not complete its handshake in time")
        case .redirectLimitReached, .redirectCycleDetected:
            return Diagnosis(
                category: .unreachable,
                cause: "captivePortal",
                title: "Redirected away from the API",
                message: "\(request) to \(host) was redirected again and again: a captive portal or proxy answers instead of the API.",
                next: portalAdvice
            )
        case .invalidURL, .emptyHost, .emptyScheme:
            return invalidURL(request: request)
        case .alreadyShutdown:
            return Diagnosis(
                category: .fatal,
                cause: "clientShutDown",
                title: "HTTP client stopped",
                message: "\(request) was not sent: the daemon's HTTP client has already shut down."
            )
        case .getConnectionFromPoolTimeout:
            return Diagnosis(
                category: .transient,
                cause: "connectionPoolTimeout",
                title: "No connection to the API free",
                message: "\(request) waited too long for a connection to \(authority): every connection was busy."
            )
        case .cancelled:
            return cancelled(request: request)
        case .bodyLengthMismatch, .traceRequestWithBody:
            return invalidRequest(request: request, detail: "its body does not match its headers")
        default:
            if error.shortDescription == "Unsupported scheme" { return invalidURL(request: request) }
            if error.shortDescription.hasPrefix("Invalid header field") {
                return invalidRequest(request: request, detail: "a header field name or value is not valid HTTP")
            }
            return Diagnosis(
                category: .transient,
                cause: "HTTPClientError",
                title: "Request failed",
                message: "\(request) to \(authority) failed: \(error.shortDescription.lowercased())."
            )
        }
    }

    // MARK: - SwiftNIO

    private static func diagnose(_ error: NIOConnectionError, target: RequestTarget, request: String) -> Diagnosis {
        if error.connectionErrors.isEmpty {
            let detail = (error.dnsAError ?? error.dnsAAAAError).map(describeDNSError)
            return dnsFailure(host: error.host, detail: detail ?? "it has no addresses")
        }
        // Happy eyeballs tried every address; each failed. The first unreachable reason is the
        // one that says most (refused over reset), the first failure otherwise.
        let diagnoses = error.connectionErrors.map { Diagnosis($0.error, target: target, request: request) }
        return diagnoses.first { $0.category == .unreachable } ?? diagnoses[0]
    }

    private static func describeDNSError(_ error: any Error) -> String {
        if let unknown = error as? SocketAddressError.UnknownHost { return unknown.errorDescription }
        return String(describing: error)
    }

    private static func diagnose(errno code: CInt, target: RequestTarget, request: String) -> Diagnosis {
        let authority = target.authority
        let host = target.host
        switch code {
        case ECONNREFUSED:
            return Diagnosis(
                category: .unreachable,
                cause: "connectionRefused",
                title: "API refused the connection",
                message: "Nothing accepts connections at \(authority) (connection refused): the API, or a proxy in front of it, is down."
            )
        case EHOSTUNREACH:
            return Diagnosis(
                category: .unreachable,
                cause: "hostUnreachable",
                title: "API host unreachable",
                message: "There is no route to \(host) (host unreachable): the host is down or the network between is broken."
            )
        case ENETUNREACH:
            return Diagnosis(
                category: .unreachable,
                cause: "networkUnreachable",
                title: "Network unreachable",
                message: "This host has no route to \(host)'s network (network unreachable): it is offline or its default route is missing."
            )
        case ENETDOWN:
            return Diagnosis(
                category: .unreachable,
                cause: "networkDown",
                title: "Network down",
                message: "The network interface towards \(host) is down."
            )
        case EADDRNOTAVAIL:
            return Diagnosis(
                category: .unreachable,
                cause: "noLocalAddress",
                title: "No network address",
                message: "This host has no usable address to connect to \(host) from (it may have just lost its network)."
            )
        case ETIMEDOUT:
            return connectTimeout(authority: authority)
        case ECONNRESET, EPIPE, ECONNABORTED:
            return connectionReset(host: host, request: request, how: "reset the connection")
        default:
            // strerror returns static strings for known codes on glibc.
            let reason = String(cString: strerror(code))
            return Diagnosis(
                category: .transient,
                cause: "IOError",
                title: "Connection failed",
                message: "\(request) to \(authority) failed: \(reason) (errno \(code))."
            )
        }
    }

    private static func diagnose(_ error: ChannelError, target: RequestTarget, request: String) -> Diagnosis {
        switch error {
        case .connectTimeout:
            return connectTimeout(authority: target.authority)
        case .eof, .ioOnClosedChannel, .alreadyClosed, .inputClosed, .outputClosed:
            return connectionReset(host: target.host, request: request, how: "closed the connection before answering")
        case .writeHostUnreachable:
            return diagnose(errno: EHOSTUNREACH, target: target, request: request)
        default:
            return Diagnosis(
                category: .transient,
                cause: "ChannelError",
                title: "Connection failed",
                message: "\(request) to \(target.authority) failed: \(error)."
            )
        }
    }

    // MARK: - TLS

    private static func diagnose(_ error: NIOSSLError, target: RequestTarget, request: String) -> Diagnosis {
        switch error {
        case .handshakeFailed(let reason):
            let text = String(describing: reason)
            if text.contains("CERTIFICATE_VERIFY_FAILED") {
                return untrustedCertificate(target: target, detail: "it is self-signed, expired, issued for another name, or by a CA this host does not trust")
            }
            if let refusal = clientCertificateRefusal(text, target: target) {
                return refusal
            }
            return Diagnosis(
                category: .unreachable,
                cause: "tlsFailure",
                title: "TLS handshake failed",
                message: "The TLS handshake with \(target.authority) failed (\(text.prefix(160))): the server or something in its place speaks no TLS this host accepts.",
                next: portalAdvice
            )
        case .unableToValidateCertificate, .noCertificateToValidate, .cannotMatchULabel:
            return untrustedCertificate(target: target, detail: "it could not be validated")
        case .failedToLoadCertificate, .failedToLoadPrivateKey, .noSuchFilesystemObject:
            return tlsConfiguration(target: target, detail: String(describing: error))
        case .uncleanShutdown:
            return connectionReset(host: target.host, request: request, how: "closed the TLS connection without finishing it")
        default:
            return Diagnosis(
                category: .unreachable,
                cause: "tlsFailure",
                title: "TLS failed",
                message: "TLS with \(target.authority) failed: \(error).",
                next: portalAdvice
            )
        }
    }

    /// The alerts a server sends about the client's certificate, as BoringSSL names them when
    /// received.
    private static let clientCertificateAlerts = [
        "ALERT_CERTIFICATE_REQUIRED", "ALERT_BAD_CERTIFICATE", "ALERT_UNKNOWN_CA", "ALERT_CERTIFICATE_EXPIRED",
        "ALERT_CERTIFICATE_REVOKED", "ALERT_CERTIFICATE_UNKNOWN", "ALERT_UNSUPPORTED_CERTIFICATE", "ALERT_ACCESS_DENIED",
    ]

    /// An alert received from the server about the client's certificate: it refused the
    /// certificate (or its absence), which a new certificate fixes, not waiting.
    private static func clientCertificateRefusal(_ text: String, target: RequestTarget) -> Diagnosis? {
        guard let alert = clientCertificateAlerts.first(where: { text.contains($0) }) else { return nil }
        return Diagnosis(
            category: .unauthenticated,
            cause: "clientCertificateRefused",
            title: "Client certificate refused",
            message: "\(target.authority) refused the TLS client certificate (\(alert)): it is missing, expired or not from a CA the server trusts."
        )
    }

    private static func diagnose(_ error: NIOSSLExtraError, target: RequestTarget) -> Diagnosis {
        switch error {
        case .failedToValidateHostname, .serverHostnameImpossibleToMatch:
            return untrustedCertificate(target: target, detail: "it is issued for another name")
        case .unknownPrivateKeyFileType, .invalidSNIHostname, .cannotUseIPAddressInSNI:
            return tlsConfiguration(target: target, detail: String(describing: error))
        default:
            return Diagnosis(
                category: .unreachable,
                cause: "tlsFailure",
                title: "TLS failed",
                message: "TLS with \(target.authority) failed: \(error).",
                next: portalAdvice
            )
        }
    }

    // MARK: - Shared wordings

    private static func dnsFailure(host: String, detail: String) -> Diagnosis {
        Diagnosis(
            category: .unreachable,
            cause: "dnsFailure",
            title: "API host not found",
            message: "The name \(host) could not be resolved (\(detail)): this host is offline, its DNS server does not answer, or the configured API address is wrong."
        )
    }

    private static func connectTimeout(authority: String) -> Diagnosis {
        Diagnosis(
            category: .unreachable,
            cause: "connectTimeout",
            title: "API not answering",
            message: "Connecting to \(authority) timed out: the host is down or the network drops the packets."
        )
    }

    private static func connectionReset(host: String, request: String, how: String) -> Diagnosis {
        Diagnosis(
            category: .transient,
            cause: "connectionReset",
            title: "Connection to the API broken",
            message: "\(host) \(how) (\(request)); it is not known whether the request took effect."
        )
    }

    private static func proxyFailure(authority: String, detail: String) -> Diagnosis {
        Diagnosis(
            category: .unreachable,
            cause: "proxyFailure",
            title: "Proxy in the way",
            message: "The proxy towards \(authority) did not let the request through: \(detail).",
            next: portalAdvice
        )
    }

    private static func untrustedCertificate(target: RequestTarget, detail: String) -> Diagnosis {
        Diagnosis(
            category: .unreachable,
            cause: "untrustedCertificate",
            title: "API certificate not trusted",
            message: "\(target.authority) presented a certificate this host does not trust: \(detail). This is usually a captive portal or an intercepting proxy answering in the API's place, or else a broken certificate on the server.",
            next: portalAdvice
        )
    }

    private static func tlsConfiguration(target: RequestTarget, detail: String) -> Diagnosis {
        Diagnosis(
            category: .fatal,
            cause: "tlsConfiguration",
            title: "TLS configuration unusable",
            message: "The TLS settings for \(target.authority) cannot be used: \(detail.prefix(200)).",
            next: "The service is paused; fix the CA file, certificate or key in the configuration and reload, then resume it."
        )
    }

    private static func invalidURL(request: String) -> Diagnosis {
        Diagnosis(
            category: .fatal,
            cause: "invalidURL",
            title: "API address unusable",
            message: "\(request) was not sent: its URL is not a valid http or https URL.",
            next: "The service is paused; correct the API base URL in the configuration and reload, then resume it."
        )
    }

    private static func invalidRequest(request: String, detail: String) -> Diagnosis {
        Diagnosis(
            category: .invalid(reason: "request not valid HTTP: \(detail)"),
            cause: "invalidRequest",
            title: "Request not sent",
            message: "\(request) was not sent: \(detail)."
        )
    }

    private static func cancelled(request: String) -> Diagnosis {
        Diagnosis(
            category: .transient,
            cause: "cancelled",
            title: "Request cancelled",
            message: "\(request) was cancelled before it finished (the daemon is stopping, or the job was cancelled)."
        )
    }
}

// MARK: - Proxies

extension HTTPFailure {
    /// A request that failed at its proxy (``ProxiedRequestError``), told as the proxy's:
    ///
    /// | step | category | cause | scope |
    /// |---|---|---|---|
    /// | connecting to the proxy | unreachable | `proxyUnreachable` | the proxy's origin |
    /// | `407` | unauthenticated | `proxyAuthenticationRequired` | the realm |
    /// | `CONNECT` refused (`403`, any `4xx`) | unreachable | `proxyRefused` | the request's origin |
    /// | the proxy cannot reach the server (`502`, `503`, `504`) | unreachable | `proxyBadGateway` | the request's origin |
    /// | a `CONNECT` answer it would not say | unreachable | `proxyFailure` | the request's origin |
    ///
    /// A proxy that refuses a host waits like a server that cannot be reached: the probe goes
    /// through the same proxy, so the work resumes once the proxy lets it through.
    init(_ proxied: ProxiedRequestError, method: String, url: String) {
        let target = RequestTarget(url: url)
        let request = "\(method) \(target.pathAndQuery)"
        let proxy = proxied.proxy
        let category: ErrorCategory
        let cause: String
        let title: String
        let message: String
        var next: String?
        switch proxied.step {
        case .connect:
            let reason = Diagnosis(proxied.underlying, target: RequestTarget(url: proxy.origin), request: "CONNECT \(target.authority)")
            category = .unreachable
            cause = "proxyUnreachable"
            title = "Proxy not answering"
            let why = switch reason.cause {
            case "connectionRefused": "nothing accepts connections at \(proxy.authority) (connection refused)"
            case "connectTimeout": "connecting to \(proxy.authority) timed out"
            default: reason.message
            }
            message = "\(request) to \(target.authority) goes through the proxy \(proxy.origin), which cannot be reached: \(why)."
            next = "Work for every server behind the proxy waits, and resumes once a probe gets through it. Start the proxy, or fix api.proxy (or https_proxy) if it moved."
        case .signIn:
            category = .unauthenticated
            cause = "proxyAuthenticationRequired"
            title = "Proxy sign-in refused"
            if let user = proxy.user {
                message = "The proxy \(proxy.origin) refused the sign-in of \(user) (407 Proxy Authentication Required) for \(request) to \(target.authority)."
                next = "Fix the proxy's password (\(proxy.credential)), or api.proxy-user, then restart errorbusd (systemctl restart errorbusd); work waits until then."
            } else {
                message = "The proxy \(proxy.origin) asks for a sign-in (407 Proxy Authentication Required) for \(request) to \(target.authority), and errorbusd has none for it."
                next = "Set api.proxy-user and the proxy's password (the credential proxy-password, or api.proxy-password-file), then restart errorbusd; work waits until then."
            }
        case .tunnel(let status?) where (400..<500).contains(status):
            category = .unreachable
            cause = "proxyRefused"
            title = "Proxy refuses the API"
            message = "The proxy \(proxy.origin) refuses to connect to \(target.authority) (\(HTTPResponseStatus(statusCode: status))): its rules do not let this host through."
            next = "Ask the proxy's administrator to allow CONNECT to \(target.authority), or list \(target.host) in api.no-proxy if this host reaches it directly. Work waits, and resumes once a probe gets through."
        case .tunnel(let status?) where status >= 500:
            category = .unreachable
            cause = "proxyBadGateway"
            title = "API not reachable from the proxy"
            message = "The proxy \(proxy.origin) could not connect to \(target.authority) for \(request) (\(HTTPResponseStatus(statusCode: status))): the API is down, or the proxy cannot reach it."
            next = "Work waits, and resumes once a probe gets through the proxy to the API."
        case .tunnel:
            category = .unreachable
            cause = "proxyFailure"
            title = "Proxy in the way"
            message = "The proxy \(proxy.origin) did not open a connection to \(target.authority) for \(request)."
            next = "Work waits, and resumes once a probe gets through the proxy to the API."
        }
        self.init(
            category: category,
            cause: cause,
            method: method,
            url: url,
            text: OperatorText(title: title, message: message, next: next),
            underlying: proxied.underlying
        )
        if proxied.step == .connect {
            // Every server behind an unreachable proxy is one incident: the proxy's.
            origin = proxy.origin
            host = proxy.host
        }
    }
}
