/// Which proxy, if any, a request to a URL goes through: one for `https` URLs, one for `http`
/// URLs, and the hosts reached directly, as curl and most daemons read `https_proxy`,
/// `http_proxy` and `no_proxy`.
public struct ProxyRoutes: Sendable, Equatable {
    /// The proxy of `https` URLs; `nil`: direct.
    public var https: HTTPProxy?
    /// The proxy of `http` URLs; `nil`: direct.
    public var http: HTTPProxy?
    /// The hosts reached without a proxy.
    public var bypass: NoProxy

    /// No proxy: every request direct.
    public static let direct = ProxyRoutes(https: nil, http: nil, bypass: NoProxy())

    /// Routes with their proxies and exceptions.
    public init(https: HTTPProxy?, http: HTTPProxy?, bypass: NoProxy) {
        self.https = https
        self.http = http
        self.bypass = bypass
    }

    /// One proxy for every URL but the `bypass` hosts.
    public init(_ proxy: HTTPProxy, bypass: NoProxy = NoProxy()) {
        self.init(https: proxy, http: proxy, bypass: bypass)
    }

    /// The routes the environment sets, read as curl reads them: `https_proxy` (or
    /// `HTTPS_PROXY`) for `https` URLs, `http_proxy` for `http` URLs (not `HTTP_PROXY`, which a
    /// CGI request's `Proxy:` header can set), `all_proxy` (or `ALL_PROXY`) for both where the
    /// other is unset; `no_proxy` (or `NO_PROXY`) the exceptions. A sign-in in a variable's URL
    /// (`http://user:password@proxy:3128`) is the proxy's.
    ///
    /// - Throws: ``InvalidProxyURL`` naming the variable whose URL cannot be used.
    public init(environment: [String: String]) throws(InvalidProxyURL) {
        func variable(_ names: String...) -> (name: String, value: String)? {
            for name in names {
                if let value = environment[name], !value.trimmingWhitespace.isEmpty { return (name, value) }
            }
            return nil
        }
        func proxy(_ setting: (name: String, value: String)?) throws(InvalidProxyURL) -> HTTPProxy? {
            guard let setting else { return nil }
            do {
                return try HTTPProxy(url: setting.value, credential: "the password in \(setting.name)")
            } catch {
                throw InvalidProxyURL(url: setting.value, reason: "\(setting.name): \(error.reason)")
            }
        }
        let all = try proxy(variable("all_proxy", "ALL_PROXY"))
        self.https = try proxy(variable("https_proxy", "HTTPS_PROXY")) ?? all
        self.http = try proxy(variable("http_proxy")) ?? all
        self.bypass = NoProxy(list: variable("no_proxy", "NO_PROXY")?.value ?? "")
    }

    /// The proxy a request to `url` goes through; `nil`: direct.
    public func proxy(for url: String) -> HTTPProxy? {
        let target = RequestTarget(url: url)
        let proxy: HTTPProxy?
        switch target.scheme {
        case "https": proxy = https
        case "http": proxy = http
        default: return nil
        }
        guard let proxy, !bypass.matches(host: target.host) else { return nil }
        return proxy
    }

    /// Whether no request goes through a proxy.
    public var isDirect: Bool { https == nil && http == nil }
}

/// The hosts reached without a proxy, as curl reads `no_proxy`: `*` for every host; a name for
/// itself and every name under it (`example.com` and `.example.com` both match
/// `api.example.com`); an IPv4 or IPv6 address for itself; `ADDRESS/BITS` for a network.
public struct NoProxy: Sendable, Equatable, CustomStringConvertible {
    /// The entries as given, lowercased.
    public private(set) var entries: [String]

    /// No exceptions.
    public init() {
        self.entries = []
    }

    /// The entries of a list (`"localhost,127.0.0.0/8,.corp.example"`): separated by commas or
    /// white space.
    public init(list: String) {
        self.init(list.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init))
    }

    /// The entries given one by one.
    public init(_ entries: [String]) {
        self.entries = entries.map { String($0.trimmingWhitespace).lowercased() }.filter { !$0.isEmpty }
    }

    /// The entries, comma-separated.
    public var description: String { entries.joined(separator: ",") }

    /// Whether a request to `host` goes direct.
    public func matches(host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        let address = IPAddressBytes(host)
        for entry in entries {
            if entry == "*" { return true }
            if let slash = entry.firstIndex(of: "/") {
                guard let address, let network = IPAddressBytes(String(entry[..<slash])), let bits = Int(entry[entry.index(after: slash)...]) else { continue }
                if network.contains(address, prefixLength: bits) { return true }
                continue
            }
            var name = entry
            if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
            if let entryAddress = IPAddressBytes(name) {
                if entryAddress == address { return true }
                continue
            }
            if name.hasPrefix(".") { name.removeFirst() }
            if name.hasSuffix(".") { name.removeLast() }
            if host == name || host.hasSuffix("." + name) { return true }
        }
        return false
    }
}

/// An IPv4 or IPv6 address as its bytes, for `no_proxy`'s networks.
struct IPAddressBytes: Equatable {
    var bytes: [UInt8]

    init?(_ text: String) {
        if let v4 = Self.ipv4(Substring(text)) {
            bytes = v4
        } else if text.contains(":"), let v6 = Self.ipv6(text) {
            bytes = v6
        } else {
            return nil
        }
    }

    /// Whether `address` is in this network of `prefixLength` bits (an IPv4 network holds no
    /// IPv6 address).
    func contains(_ address: IPAddressBytes, prefixLength: Int) -> Bool {
        guard address.bytes.count == bytes.count, (0...bytes.count * 8).contains(prefixLength) else { return false }
        var remaining = prefixLength
        for (mine, theirs) in zip(bytes, address.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if mine & mask != theirs & mask { return false }
            remaining -= 8
        }
        return true
    }

    private static func ipv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    private static func ipv6(_ text: String) -> [UInt8]? {
        let halves = text.split(separator: "::", omittingEmptySubsequences: false).map(String.init)
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, field) in fields.enumerated() {
                if index == fields.count - 1, field.contains("."), let v4 = ipv4(field) {
                    bytes += v4
                    continue
                }
                guard (1...4).contains(field.count), let value = UInt16(field, radix: 16) else { return nil }
                bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count < 16 else { return nil }
        return head + Array(repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
