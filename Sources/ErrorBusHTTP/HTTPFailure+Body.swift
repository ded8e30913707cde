import ErrorBusUnits
import ErrorBus
import ErrorBusSupport
public import NIOCore

extension HTTPFailure {
    /// How much of an error answer's body is read to explain it (a problem document, an OAuth
    /// error, a line of text): 64 KiB. A longer body is not read further and the failure is
    /// classified by its status alone.
    public static let errorBodyLimit = 64 * 1024

    /// An answer whose body is not what the request expected: garbage, an HTML page, JSON of
    /// another shape. `invalid`, cause `undecodableResponse`: the same request would get the same
    /// answer, so the job is dead-lettered for an operator rather than retried.
    ///
    /// An HTML page where JSON was expected is also what a captive portal or a proxy serves in
    /// the API's place; the message says so (naming the page's `<title>`), and the probe — which
    /// only takes a `204` for an answer — keeps the other work parked while that lasts.
    ///
    /// - Parameters:
    ///   - method: the request method, e.g. `"GET"`.
    ///   - url: the request URL.
    ///   - status: the answer's status.
    ///   - contentType: the answer's `Content-Type`, if it had one.
    ///   - body: the body as it was read (its first 16 KiB are looked at, for a page's title).
    ///   - expected: what the body should have been, for the message, e.g. `"a JSON token response"`.
    ///   - error: the decoder's error, kept for logs; `nil` when the body decoded but is not
    ///     what was expected (a receipt for another item).
    public static func undecodable(
        method: String,
        url: String,
        status: Int = 200,
        contentType: String?,
        body: ByteBuffer?,
        expected: String = "JSON",
        error: (any Error)? = nil
    ) -> HTTPFailure {
        let target = RequestTarget(url: url)
        let request = "\(method) \(target.pathAndQuery)"
        let bytes = body.map { Array($0.readableBytesView.prefix(16 * 1024)) } ?? []
        let what: String
        var portalHint = ""
        if let contentType, MediaType.isHTML(contentType) {
            if let title = HTMLTitle.find(in: bytes) {
                what = "an HTML page titled “\(title)”"
            } else {
                what = "an HTML page"
            }
            portalHint = " If this host is behind a captive portal or a proxy, that is what answered in the API's place."
        } else if bytes.isEmpty {
            what = "an empty body"
        } else {
            let body = contentType.map { "a \(MediaType.essence(of: $0)) body" } ?? "a body"
            what = error == nil ? body : body + " that does not decode"
        }
        return HTTPFailure(
            category: .invalid(reason: "answer is not \(expected)"),
            cause: "undecodableResponse",
            method: method,
            url: url,
            text: OperatorText(
                title: "Answer not understood",
                message: "\(target.host) answered \(request) with \(status) and \(what) instead of \(expected).\(portalHint)",
                next: "The job was set aside as a dead letter; retry it once the network or the API answers as expected (if the API changed, errorbusd may need an update)."
            ),
            status: status,
            underlying: error
        )
    }

    /// An answer whose body is larger than the request allows. `invalid`, cause `bodyTooLarge`:
    /// a retry would fetch the same oversized body again on every back-off step, so the job is
    /// dead-lettered and an operator decides. The limits are the caller's own (a receipt's, a
    /// token's, a resource's), not settings: the advice is to find out what answers so much.
    ///
    /// - Parameters:
    ///   - method: the request method, e.g. `"GET"`.
    ///   - url: the request URL.
    ///   - status: the answer's status, when its head was read.
    ///   - limit: the limit in bytes.
    ///   - announced: the `Content-Length` the server announced, if any.
    public static func bodyTooLarge(method: String, url: String, status: Int? = nil, limit: Int, announced: Int? = nil) -> HTTPFailure {
        let target = RequestTarget(url: url)
        let size = announced.map { "a body of \(ByteCountText.format($0))" } ?? "a body of more than \(ByteCountText.format(limit))"
        return HTTPFailure(
            category: .invalid(reason: "answer larger than the \(ByteCountText.format(limit)) limit"),
            cause: "bodyTooLarge",
            method: method,
            url: url,
            text: OperatorText(
                title: "Answer too large",
                message: "\(target.host) answered \(method) \(target.pathAndQuery) with \(size), over the \(ByteCountText.format(limit)) this request allows; it was not read further.",
                next: "The job was set aside as a dead letter. The limit is errorbusd's own for this answer and no setting raises it: an answer this large is not what the API is expected to send. Find out what answers at this address (a proxy, a captive portal, a changed API), then retry it."
            ),
            status: status
        )
    }
}
