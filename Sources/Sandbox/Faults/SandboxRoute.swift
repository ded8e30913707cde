/// The part of the sandbox's API a request belongs to: what faults are set for and counted by.
///
/// Classification looks at the path only, so the connection handler (which sees nothing but the
/// request head) and the router agree on it.
enum SandboxRoute: String, Sendable, Hashable, CaseIterable, Codable, Comparable {
    /// `POST /oauth/token`.
    case token
    /// `PUT /v1/items/{id}`.
    case items
    /// `GET /v1/resources/{name}`.
    case resources
    /// `GET /healthz`.
    case healthz
    /// Anything else outside `/admin` (the captive portal's `/login`, unknown paths): counted, never faulted.
    case other
    /// `/admin/…`: never faulted, never counted.
    case admin

    /// The routes a fault can be set on; `all` in the admin API means these.
    static let faultable: [SandboxRoute] = [.token, .items, .resources, .healthz]

    /// Classifies a request path (with or without a query string).
    init(path: Substring) {
        var path = path
        if let query = path.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            path = path[..<query]
        }
        if path == "/oauth/token" {
            self = .token
        } else if path.hasPrefix("/v1/items/") {
            self = .items
        } else if path.hasPrefix("/v1/resources/") {
            self = .resources
        } else if path == "/healthz" {
            self = .healthz
        } else if path == "/admin" || path.hasPrefix("/admin/") {
            self = .admin
        } else {
            self = .other
        }
    }

    init(path: String) {
        self.init(path: path[...])
    }

    /// Whether faults apply to this route.
    var isFaultable: Bool {
        switch self {
        case .token, .items, .resources, .healthz: true
        case .other, .admin: false
        }
    }

    static func < (lhs: SandboxRoute, rhs: SandboxRoute) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
