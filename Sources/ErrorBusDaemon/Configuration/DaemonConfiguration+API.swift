package import ErrorBusHTTP
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DaemonConfiguration {
    /// The remote API the services talk to (`api.*`).
    package struct API: Sendable {
        /// `api.base-url`: the API's root, `http` or `https` with a host, optionally a path
        /// prefix; no trailing `/`. Default `http://127.0.0.1:8080`.
        package var baseURL: String
        /// `api.token-path`: the OAuth token endpoint under ``baseURL``. Default `/oauth/token`.
        package var tokenPath: String
        /// `api.upload.*`: how a file is uploaded and what answer means the API has it. Its URL,
        /// when a path, is under ``baseURL``.
        package var upload: UploadContract
        /// `api.resources-path`: resources come from `GET baseURL + resourcesPath + "/" + name`.
        /// Default `/v1/resources`.
        package var resourcesPath: String
        /// `api.ca-file`: a PEM bundle of extra certificate authorities to trust for TLS, on top of
        /// the system's. Default none.
        package var caFile: String?
        /// `api.realm`: the authentication realm the bus groups `unauthenticated` failures by.
        /// Default `api`.
        package var realm: String
        /// `api.connect-timeout`: how long a TCP (and TLS) connect may take. Default 5 s.
        package var connectTimeout: Duration
        /// `api.request-timeout`: how long a request may go without a byte moving, and how long one
        /// without an upload's body may take in all. Default 30 s.
        package var requestTimeout: Duration
        /// `api.classify`: corrections of how this API's failed answers are classified, in order
        /// (``ClassificationOverride``). Default none.
        package var classify: [ClassificationOverride]

        /// `api.proxy`: the HTTP proxy every request goes through (`http://HOST[:PORT]`), `nil`
        /// for the environment's (`https_proxy`, `http_proxy`, as curl reads them). Default none.
        package var proxy: String?
        /// `api.proxy-user`: the user the proxy's sign-in is for. Default none.
        package var proxyUser: String?
        /// `api.proxy-password-file`: a file holding the proxy's password; without it, the
        /// credential `proxy-password`. Default none.
        package var proxyPasswordFile: String?
        /// `api.no-proxy`: hosts reached without the proxy, as `no_proxy` lists them. Default none.
        package var noProxy: [String]
        /// Which proxy each request goes through: `api.proxy` with its sign-in and `api.no-proxy`,
        /// or the environment's; set by ``DaemonConfiguration/load(file:environment:credentialSource:)``.
        /// Default direct.
        package var routes: ProxyRoutes = .direct

        /// What `api.probe-url` was set to; `nil` derives it from ``baseURL``.
        package private(set) var configuredProbeURL: String?

        /// `api.probe-url`: what the reachability gate `GET`s; only a 204 means reachable.
        ///
        /// Reading it never gives `nil`: unless set, it is ``baseURL`` + `/healthz`, following
        /// ``baseURL`` when that changes. Setting `nil` goes back to that default.
        package var probeURL: String? {
            get { configuredProbeURL ?? baseURL + "/healthz" }
            set { configuredProbeURL = newValue }
        }

        /// The host part of ``baseURL`` (`127.0.0.1`, `api.example.net`): the scope of network
        /// failures on the bus. Empty only if ``baseURL`` is not a URL, which a loaded
        /// configuration never is.
        package var host: String {
            URLComponents(string: baseURL)?.host ?? ""
        }

        /// Creates the section; every setting defaults to the built-in default.
        package init(
            baseURL: String = "http://127.0.0.1:8080",
            tokenPath: String = "/oauth/token",
            upload: UploadContract = UploadContract(),
            resourcesPath: String = "/v1/resources",
            probeURL: String? = nil,
            realm: String = "api",
            connectTimeout: Duration = .seconds(5),
            requestTimeout: Duration = .seconds(30),
            caFile: String? = nil,
            classify: [ClassificationOverride] = [],
            proxy: String? = nil,
            proxyUser: String? = nil,
            proxyPasswordFile: String? = nil,
            noProxy: [String] = []
        ) {
            self.baseURL = baseURL
            self.tokenPath = tokenPath
            self.upload = upload
            self.resourcesPath = resourcesPath
            self.configuredProbeURL = probeURL
            self.realm = realm
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.caFile = caFile
            self.classify = classify
            self.proxy = proxy
            self.proxyUser = proxyUser
            self.proxyPasswordFile = proxyPasswordFile
            self.noProxy = noProxy
        }
    }
}

extension DaemonConfiguration.API: Equatable {
    /// Compares the probe URL as used: an unset one equals the one it derives to.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.baseURL == rhs.baseURL
            && lhs.tokenPath == rhs.tokenPath
            && lhs.upload == rhs.upload
            && lhs.resourcesPath == rhs.resourcesPath
            && lhs.probeURL == rhs.probeURL
            && lhs.realm == rhs.realm
            && lhs.connectTimeout == rhs.connectTimeout
            && lhs.requestTimeout == rhs.requestTimeout
            && lhs.caFile == rhs.caFile
            && lhs.classify == rhs.classify
            && lhs.proxy == rhs.proxy
            && lhs.proxyUser == rhs.proxyUser
            && lhs.proxyPasswordFile == rhs.proxyPasswordFile
            && lhs.noProxy == rhs.noProxy
            && lhs.routes == rhs.routes
    }
}
