/// The parts of a request URL that failure messages and scopes need: origin, host, port, path.
///
/// A small parser of `scheme://[userinfo@]host[:port][/path][?query][#fragment]` (RFC 3986 §3)
/// rather than Foundation's `URL`, so classification stays cheap and never fails: whatever the
/// string, there is a host to group by (the whole string, at worst).
public struct RequestTarget: Sendable, Hashable {
    /// `http` or `https`, lowercased; empty when the URL has no scheme.
    public var scheme: String
    /// The host, lowercased, without brackets for an IPv6 literal.
    public var host: String
    /// The explicit port, or the scheme's default (80, 443), or `nil`.
    public var port: Int?
    /// The path and query, `/` at least.
    public var pathAndQuery: String

    /// The parts of `url`. Never fails: a string with no host to find is its own host.
    public init(url: String) {
        var rest = Substring(url)
        if let schemeEnd = rest.firstRange(of: "://") {
            scheme = rest[..<schemeEnd.lowerBound].lowercased()
            rest = rest[schemeEnd.upperBound...]
        } else {
            scheme = ""
        }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        var path = rest[authorityEnd...]
        if let fragment = path.firstIndex(of: "#") { path = path[..<fragment] }
        pathAndQuery = path.isEmpty ? "/" : (path.first == "?" ? "/" + path : String(path))

        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var portText: Substring?
        if authority.first == "[", let close = authority.firstIndex(of: "]") {
            host = authority[authority.index(after: authority.startIndex)..<close].lowercased()
            let afterClose = authority[authority.index(after: close)...]
            if afterClose.first == ":" { portText = afterClose.dropFirst() }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon].lowercased()
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority.lowercased()
        }
        if host.isEmpty { host = url }
        port = portText.flatMap { Int($0) } ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
    }

    /// `host:port` for messages (`[::1]:8080` for an IPv6 literal), or the host alone.
    var authority: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return port.map { "\(shownHost):\($0)" } ?? shownHost
    }

    /// The origin (RFC 6454 §6.2: scheme, host and port, the scheme's default port left out),
    /// e.g. `https://api.example.net` or `http://127.0.0.1:8080`: what fails together, and so the
    /// scope requests to this URL run under on the bus. Two ports of one host are two servers.
    public var origin: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let isDefault = (scheme == "https" && port == 443) || (scheme == "http" && port == 80)
        let hostAndPort = isDefault ? shownHost : port.map { "\(shownHost):\($0)" } ?? shownHost
        return scheme.isEmpty ? hostAndPort : "\(scheme)://\(hostAndPort)"
    }
}
