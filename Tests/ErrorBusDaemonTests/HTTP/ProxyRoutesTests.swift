import ErrorBusHTTP
import Testing

/// Which requests go through which proxy: `api.proxy`, or the environment as curl reads it, and
/// the hosts `no_proxy` sends direct.
@Suite struct ProxyRoutesTests {
    @Test func aProxyURLIsTakenApart() throws {
        let proxy = try HTTPProxy(url: "http://Proxy.Corp.Example:8080/", credential: "")
        #expect(proxy.host == "proxy.corp.example" && proxy.port == 8080 && proxy.user == nil)
        #expect(proxy.origin == "http://proxy.corp.example:8080")
        // curl's default scheme and squid's port.
        let bare = try HTTPProxy(url: "proxy", credential: "")
        #expect(bare.origin == "http://proxy:3128")
        let v6 = try HTTPProxy(url: "http://[::1]:3128", credential: "")
        #expect(v6.host == "::1" && v6.origin == "http://[::1]:3128")
        let signedIn = try HTTPProxy(url: "http://fleet:p%40ss%20word@proxy:3128", credential: "the password in https_proxy")
        #expect(signedIn.user == "fleet" && signedIn.password == "p@ss word")
        #expect(!signedIn.description.contains("p@ss"), "\(signedIn)")
    }

    @Test(arguments: [
        ("https://proxy:3128", "only an http:// proxy"),
        ("socks5://proxy:1080", "only an http:// proxy"),
        ("http://proxy:3128/path", "nothing after it"),
        ("http://proxy:99999", "a port from 1 to 65535"),
        ("http://:3128", "expected a host"),
    ])
    func anUnusableProxyURLSaysWhy(url: String, reason: String) {
        #expect(throws: InvalidProxyURL.self) { try HTTPProxy(url: url, credential: "") }
        do {
            _ = try HTTPProxy(url: url, credential: "")
        } catch {
            #expect(error.reason.contains(reason), "\(error)")
        }
    }

    @Test func theEnvironmentIsReadAsCurlReadsIt() throws {
        let routes = try ProxyRoutes(environment: [
            "HTTPS_PROXY": "http://secure:3128",
            "HTTP_PROXY": "http://set-by-a-cgi-request:1",
            "http_proxy": "http://plain:3128",
            "no_proxy": "localhost, .corp.example,10.0.0.0/8 ,[::1]",
        ])
        #expect(routes.proxy(for: "https://api.example.com/v1")?.host == "secure")
        #expect(routes.proxy(for: "http://api.example.com/v1")?.host == "plain")
        for direct in ["https://localhost:8443/x", "https://api.corp.example/", "https://corp.example/", "http://10.20.30.40/", "https://[::1]:8443/"] {
            #expect(routes.proxy(for: direct) == nil, "\(direct)")
        }
        for proxied in ["https://notcorp.example/", "http://11.0.0.1/", "https://[::2]/"] {
            #expect(routes.proxy(for: proxied) != nil, "\(proxied)")
        }
        // HTTP_PROXY alone is not read (a CGI request's Proxy: header sets it); all_proxy is.
        #expect(try ProxyRoutes(environment: ["HTTP_PROXY": "http://p:1"]).isDirect)
        let all = try ProxyRoutes(environment: ["ALL_PROXY": "http://everything:3128", "https_proxy": " "])
        #expect(all.proxy(for: "https://a/")?.host == "everything" && all.proxy(for: "http://a/")?.host == "everything")
        #expect(try ProxyRoutes(environment: ["https_proxy": "http://p:1", "NO_PROXY": "*"]).proxy(for: "https://a/") == nil)
        #expect(throws: InvalidProxyURL.self) { try ProxyRoutes(environment: ["https_proxy": "https://p:1"]) }
    }

    @Test func noProxyMatchesNamesAddressesAndNetworks() {
        let bypass = NoProxy(list: "example.com,192.168.1.7,fd00::/8,127.0.0.0/8")
        #expect(bypass.matches(host: "example.com") && bypass.matches(host: "API.example.com") && bypass.matches(host: "example.com."))
        #expect(!bypass.matches(host: "badexample.com"))
        #expect(bypass.matches(host: "192.168.1.7") && !bypass.matches(host: "192.168.1.70"))
        #expect(bypass.matches(host: "fd12:3456::1") && !bypass.matches(host: "fe80::1"))
        #expect(bypass.matches(host: "127.1.2.3") && !bypass.matches(host: "128.0.0.1"))
        // An IPv4 network holds no IPv6 address, and the reverse.
        #expect(!NoProxy(["0.0.0.0/0"]).matches(host: "::1") && !NoProxy(["::/0"]).matches(host: "10.0.0.1"))
        #expect(!NoProxy().matches(host: "example.com"))
    }
}
