public import AsyncHTTPClient
public import NIOCore

extension HTTPClient.Configuration {
    /// A client configuration for the requests to an API and its probe (errorbusd's own).
    ///
    /// - Redirects are **not** followed: an API that answers with a redirect is a captive portal
    ///   or a proxy, and ``HTTPFailure`` and ``APIProbe`` need to see it to say so.
    /// - A bounded connect timeout: AsyncHTTPClient retries failed connection attempts until it
    ///   runs out, so this is how long a refused or blackholed connection takes to be reported.
    /// - A read timeout, so a server gone silent mid-answer is noticed; bodies are further
    ///   bounded by ``AsyncHTTPClient/HTTPClientResponse/collectBody(upTo:deadline:method:url:)``.
    ///   It starts once the request is sent: a request body that stops moving (a server that no
    ///   longer reads, its connection open) is not noticed by it, nor by AsyncHTTPClient's write
    ///   timeout (which counts only while the connection takes bytes). Whoever streams a body
    ///   long enough for that to matter bounds it by its progress: errorbusd's uploads do.
    /// - No decompression: bodies are limited in bytes on the wire, and a small compressed body
    ///   must not expand past the limit unnoticed.
    public static func errorbusAPI(connectTimeout: TimeAmount = .seconds(5), readTimeout: TimeAmount = .seconds(30)) -> Self {
        HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: connectTimeout, read: readTimeout),
            decompression: .disabled
        )
    }
}
