import Hummingbird
import NIOCore

extension SandboxAPI {
    /// The captive portal's sign-in page, as a hotel network would serve it.
    static let portalHTML = """
        <!DOCTYPE html>
        <html lang="en">
        <head><meta charset="utf-8"><title>Sign in to Guest Wi-Fi</title></head>
        <body>
        <h1>Welcome to Guest Wi-Fi</h1>
        <p>Please accept the terms of use to continue to the internet.</p>
        <form method="post" action="/login"><button type="submit">Accept and connect</button></form>
        </body>
        </html>

        """

    /// `GET /login`, and what `captivePortal` with `portal: page` serves in place of any answer.
    static func portalPage() -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: portalHTML))
        )
    }
}
