public import AsyncHTTPClient

/// An HTTP proxy that requests go through: `https` and `http` alike through a `CONNECT` tunnel,
/// with an optional sign-in (`Proxy-Authorization: Basic`).
///
/// ```swift
/// let proxy = try HTTPProxy(url: "http://proxy.corp.example:3128", user: "fleet", password: secret,
///                           credential: "the credential proxy-password")
/// ```
public struct HTTPProxy: Sendable, Hashable, CustomStringConvertible {
    /// The proxy's host: a name, an IPv4 address, or an IPv6 address without brackets.
    public var host: String
    /// The proxy's port (default 3128 for a URL without one, as squid's).
    public var port: Int
    /// The user name it signs in as; `nil` for a proxy that asks for no sign-in.
    public var user: String?
    /// The password of ``user``, sent as `Proxy-Authorization: Basic`; never in ``description``.
    public var password: String?
    /// Where ``password`` comes from, in words an operator can act on ("the credential
    /// proxy-password"), for a `407`.
    public var credential: String

    /// What a URL without a port connects to: squid's port, the most common proxy's.
    public static let defaultPort = 3128

    /// A proxy at `url` (`http://HOST[:PORT]`; a `user:password@` in it is the sign-in unless
    /// `user` is given).
    ///
    /// - Throws: ``InvalidProxyURL`` when `url` is not an `http://` URL with a host and nothing
    ///   after it but a `/`.
    public init(url: String, user: String? = nil, password: String? = nil, credential: String) throws(InvalidProxyURL) {
        let parsed = try Self.parse(url)
        self.host = parsed.host
        self.port = parsed.port
        self.user = user ?? parsed.user
        self.password = user == nil ? parsed.password : password
        self.credential = credential
    }

    /// The proxy's origin, `http://HOST:PORT`: the scope of an incident where it cannot be reached.
    public var origin: String {
        "http://\(authority)"
    }

    /// `HOST:PORT`, an IPv6 host in brackets.
    public var authority: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// `http://HOST:PORT`, and the user it signs in as; never the password.
    public var description: String {
        user.map { "\(origin) (as \($0))" } ?? origin
    }

    /// AsyncHTTPClient's setting for this proxy.
    public var configuration: HTTPClient.Configuration.Proxy {
        .server(host: host, port: port, authorization: user.map { .basic(username: $0, password: password ?? "") })
    }

    /// `url` taken apart, or why not.
    static func parse(_ url: String) throws(InvalidProxyURL) -> (host: String, port: Int, user: String?, password: String?) {
        var rest = Substring(url.trimmingWhitespace)
        if let scheme = rest.firstRange(of: "://") {
            guard rest[..<scheme.lowerBound].lowercased() == "http" else {
                throw InvalidProxyURL(url: url, reason: "only an http:// proxy is supported (https:// goes through it with CONNECT)")
            }
            rest = rest[scheme.upperBound...]
        }
        // curl takes "proxy:3128" as http://proxy:3128.
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#") else {
            throw InvalidProxyURL(url: url, reason: "expected http://HOST[:PORT] with nothing after it")
        }
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = Self.percentDecoded(userInfo[..<colon])
                password = Self.percentDecoded(userInfo[userInfo.index(after: colon)...])
            } else {
                user = Self.percentDecoded(userInfo)
            }
        }
        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw InvalidProxyURL(url: url, reason: "an IPv6 address without its closing ]")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw InvalidProxyURL(url: url, reason: "expected :PORT after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw InvalidProxyURL(url: url, reason: "expected a host") }
        var port = defaultPort
        if let portText {
            guard let number = Int(portText), (1...65_535).contains(number) else {
                throw InvalidProxyURL(url: url, reason: "expected a port from 1 to 65535, got \"\(portText)\"")
            }
            port = number
        }
        return (host.lowercased(), port, user, password)
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
               let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A proxy URL that cannot be used, and why.
public struct InvalidProxyURL: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL as given.
    public var url: String
    /// Why it cannot be used.
    public var reason: String

    public var description: String { "\(reason), got \"\(url)\"" }
}

extension StringProtocol {
    var trimmingWhitespace: Substring {
        let text = Substring(self)
        guard let first = text.firstIndex(where: { !$0.isWhitespace }), let last = text.lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return text[first...last]
    }
}
