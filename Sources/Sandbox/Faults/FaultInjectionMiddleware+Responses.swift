import HTTPTypes
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension FaultInjectionMiddleware {
    /// `status`/`invalid`: the code with an RFC 9457 body and, if set, `Retry-After`.
    static func statusResponse(_ fault: FaultMode.Status, instance: String) -> Response {
        var headers: HTTPFields = [:]
        switch fault.retryAfter {
        case nil:
            break
        case .seconds(let seconds):
            headers[.retryAfter] = String(seconds)
        case .httpDate(let seconds):
            let now = Int64(Date().timeIntervalSince1970)
            headers[.retryAfter] = HTTPDate.format(unixSeconds: now + Int64(seconds))
        case .verbatim(let text):
            headers[.retryAfter] = text
        }
        let problem = ProblemDetails(
            type: "urn:errorbus:sandbox:injected-fault",
            status: HTTPResponse.Status(code: fault.status),
            detail: fault.detail ?? "The sandbox was told to answer \(fault.status).",
            headers: headers
        )
        return problem.response(instance: instance)
    }

    /// The quota's fields on an answer (draft-ietf-httpapi-ratelimit-headers): what remains until
    /// the reset, and the policy.
    static func tell(_ quota: CapacityLimiter.Quota, in response: inout Response) {
        response.headers[HTTPField.Name("RateLimit")!] = "\"default\";r=\(quota.remaining);t=\(Int(quota.reset.seconds.rounded(.up)))"
        response.headers[HTTPField.Name("RateLimit-Policy")!] = "\"default\";q=\(quota.limit);w=\(Int(quota.window.seconds.rounded()))"
    }

    /// `garbage`: 200 with a body no API client expects, labelled as HTML.
    static func garbageResponse() -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "text/html; charset=iso-8859-1"],
            body: .init(byteBuffer: ByteBuffer(string: "<html><body>\u{FFFD}\u{FFFD} 0xDEADBEEF ]]}{{[ not the answer you expected\n"))
        )
    }

    /// `wrongReceipt`: 201 with the receipt of an item nobody sent.
    static func wrongReceiptResponse() -> Response {
        Response(
            status: .created,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: #"{"id":"not-the-item-you-sent","bytes":0,"sha256":"","versions":1}"#))
        )
    }

    /// Thrown from the `truncated` body once it has sent less than it promised, so Hummingbird
    /// closes the connection.
    struct TruncatedOnPurpose: Error {}

    /// `truncated`: `Content-Length: 4096`, 26 bytes of plausible JSON, then the connection closes.
    static func truncatedResponse() -> Response {
        let start = ByteBuffer(string: #"{"access_token":"truncate"#)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: ResponseBody(contentLength: 4096) { writer in
                try await writer.write(start)
                throw TruncatedOnPurpose()
            }
        )
    }

    /// `huge`: 200 `application/json` whose body is spaces (valid JSON whitespace, so a parser
    /// keeps reading), `byteCount` of them with a matching `Content-Length`, or endless and
    /// chunked. Streamed in 64 KiB writes that wait for the client, never buffered.
    static func hugeResponse(byteCount: Int?) -> Response {
        let chunk = ByteBuffer(repeating: UInt8(ascii: " "), count: 64 * 1024)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: ResponseBody(contentLength: byteCount) { writer in
                var remaining = byteCount ?? .max
                while remaining > 0 {
                    try Task.checkCancellation()
                    let length = min(remaining, chunk.readableBytes)
                    try await writer.write(chunk.getSlice(at: chunk.readerIndex, length: length)!)
                    if byteCount != nil { remaining -= length }
                }
                try await writer.finish(nil)
            }
        )
    }

    /// `slow` with `trickle`: the head at once, the body in up to 16 pieces spread over `delay`
    /// (an empty body is simply finished after `delay`).
    static func trickled(_ response: Response, over delay: Duration, clock: SandboxClock) -> Response {
        var response = response
        let body = response.body
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            try await body.write(TricklingBodyWriter(parent: writer, delay: delay, clock: clock))
        }
        return response
    }
}
