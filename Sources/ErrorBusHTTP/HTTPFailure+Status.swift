import ErrorBusUnits
import ErrorBus
import ErrorBusSupport
public import NIOCore
public import NIOHTTP1

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension HTTPFailure {
    /// Classifies an answer whose status the request did not expect.
    ///
    /// | status | category | cause |
    /// |---|---|---|
    /// | 401 | unauthenticated | `http401` (message from `WWW-Authenticate`'s `error_description`, the problem or the OAuth error) |
    /// | 403 | invalid | `http403` (signing in again does not help: the message says so) |
    /// | 400 with nginx's page for a missing or refused TLS client certificate | unauthenticated | `clientCertificateRefused` |
    /// | 400, 404, 409, 413, 422 and other 4xx | invalid(reason) | `http4xx` (RFC 9457 problem `title`/`detail` in the text and reason) |
    /// | 407 | unreachable | `http407` (a proxy wants credentials) |
    /// | 408, 425 | transient | `http408`, `http425` |
    /// | 429 | rateLimited(Retry-After, or the `RateLimit` fields' reset when nothing remains) | `http429` |
    /// | 503 with a usable `Retry-After` (or `RateLimit` reset) | rateLimited(Retry-After) | `http503` |
    /// | 503 without, and every other 5xx | transient | `http5xx` |
    /// | 3xx except 304 (a redirect on an API call) | unreachable | `captivePortal` (naming the `Location`) |
    /// | anything else (1xx, 2xx, 304, > 599) | invalid(reason) | `http<status>` |
    ///
    /// An object store's XML error document (S3's `<Error><Code>`) says more than its status:
    ///
    /// | code | category | cause |
    /// |---|---|---|
    /// | `SignatureDoesNotMatch`, `InvalidAccessKeyId`, `AccessDenied` | unauthenticated (an operator fixes the key; the message names it) | `s3<Code>` |
    /// | `ExpiredToken`, `TokenRefreshRequired` | unauthenticated (the session token is renewed) | `s3<Code>` |
    /// | `SlowDown` | rateLimited(Retry-After) | `s3SlowDown` |
    /// | `RequestTimeTooSkewed` | transient (the message says how far the host's clock is off) | `s3RequestTimeTooSkewed` |
    /// | `NoSuchBucket` | unreachable (the bucket named; the probe tells when it is there) | `s3NoSuchBucket` |
    /// | `EntityTooLarge` | invalid (that file's alone) | `s3EntityTooLarge` |
    /// | `InternalError`, and any other code | as its status | `http<status>` |
    ///
    /// - Parameters:
    ///   - status: the answer's status code.
    ///   - headers: the answer's header fields (`Retry-After`, `RateLimit`, `WWW-Authenticate`,
    ///     `Location`, `Content-Type`).
    ///   - body: the start of the answer's body, if it was read (a problem document is at most
    ///     a few KiB; ``HTTPFailure/errorBodyLimit`` is what ``HTTPFailure/classifying(_:method:url:deadline:now:)``
    ///     reads).
    ///   - method: the request method, e.g. `"PUT"`.
    ///   - url: the request URL.
    ///   - now: the time `Retry-After` dates are measured from.
    public init(status: Int, headers: HTTPHeaders, body: ByteBuffer?, method: String, url: String, now: Date = Date()) {
        let target = RequestTarget(url: url)
        let answer = ErrorAnswer(status: status, headers: headers, body: body, now: now)
        let diagnosis = StatusDiagnosis(answer: answer, target: target, request: "\(method) \(target.pathAndQuery)", method: method)
        self.init(
            category: diagnosis.category,
            cause: diagnosis.cause,
            method: method,
            url: url,
            text: OperatorText(title: diagnosis.title, message: diagnosis.message, next: diagnosis.next),
            status: status,
            retryAfter: answer.retryAfter,
            problem: answer.problem
        )
    }
}

/// What an error answer says, taken apart once.
private struct ErrorAnswer {
    var status: Int
    var reasonPhrase: String
    var retryAfter: Duration?
    var location: String?
    var problem: ProblemDetails?
    var oauthError: OAuthErrorBody?
    /// An object store's `<Error>` document.
    var s3Error: S3ErrorBody?
    var challenges: [AuthenticationChallenge]
    /// The first line of a short `text/plain` body.
    var plainText: String?
    /// The `<title>` of an HTML body.
    var htmlTitle: String?

    init(status: Int, headers: HTTPHeaders, body: ByteBuffer?, now: Date) {
        self.status = status
        reasonPhrase = HTTPResponseStatus(statusCode: status).reasonPhrase
        // Retry-After first; without one, a RateLimit field with nothing left says when to come back.
        retryAfter = headers.first(name: "Retry-After").flatMap { RetryAfter.parse($0, now: now) }
            ?? RateLimitFields(headers: headers, now: now)?.pause
        location = headers.first(name: "Location")
        challenges = AuthenticationChallenge.parse(headers["WWW-Authenticate"])
        let contentType = headers.first(name: "Content-Type")
        let bytes = body.map { Array($0.readableBytesView) } ?? []
        problem = ProblemDetails.parse(contentType: contentType, body: bytes)
        oauthError = problem == nil ? OAuthErrorBody.parse(contentType: contentType, body: bytes) : nil
        s3Error = problem == nil && oauthError == nil ? S3ErrorBody.parse(contentType: contentType, body: bytes) : nil
        if let contentType, MediaType.isHTML(contentType) {
            htmlTitle = HTMLTitle.find(in: bytes)
        }
        if problem == nil, oauthError == nil, let contentType, MediaType.essence(of: contentType) == "text/plain" {
            let firstLine = String(decoding: bytes.prefix(400), as: UTF8.self).split(whereSeparator: \.isNewline).first
            plainText = firstLine.map { String($0.trimmingASCIIWhitespace().prefix(200)) }.flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    /// The status and its title: the problem's `title` when there is one (`422 Validation
    /// failed`), the standard reason phrase otherwise (`422 Unprocessable Entity`).
    var statusText: String {
        if let title = problem?.title, !title.isEmpty { return "\(status) \(title)" }
        return reasonPhrase.isEmpty ? "\(status)" : "\(status) \(reasonPhrase)"
    }

    /// What the server said about this occurrence, for a person: the problem's detail, the
    /// OAuth error, or the first line of a plain-text body.
    var explanation: String? {
        if let problem { return problem.detail.flatMap { $0.isEmpty ? nil : $0 } }
        if let oauthError { return oauthError.explanation }
        if let s3Error { return s3Error.explanation }
        return plainText
    }

    /// The status, then the explanation: `422 Unprocessable Content: The title field is required.`
    var summary: String {
        explanation.map { "\(statusText): \(Self.sentence($0))" } ?? statusText
    }

    /// Ends `text` with a full stop unless it already ends a sentence.
    static func sentence(_ text: String) -> String {
        guard let last = text.last else { return text }
        return ".!?".contains(last) ? text : text + "."
    }
}

/// The words and category for one status.
private struct StatusDiagnosis {
    var category: ErrorCategory
    var cause: String
    var title: String
    var message: String
    var next: String?

    init(answer: ErrorAnswer, target: RequestTarget, request: String, method: String) {
        let host = target.host
        let status = answer.status
        cause = "http\(status)"
        next = nil
        if let s3 = answer.s3Error, let known = Self.objectStore(s3, answer: answer, host: host, request: request) {
            (category, cause, title, message, next) = known
            return
        }
        switch status {
        case 401:
            let challenge = answer.challenges.first { $0.error != nil } ?? answer.challenges.first
            let why = (challenge?.errorDescription ?? answer.explanation).map { $0.hasSuffix(".") ? String($0.dropLast()) : $0 }
            let code = challenge?.error.map { " (\($0))" } ?? ""
            category = .unauthenticated
            title = challenge?.scheme.lowercased() == "bearer" ? "Access token refused" : "Credentials refused"
            message =
                "\(host) refused the credentials sent with \(request)"
                + (why.map { ": \($0)\(code)." } ?? "\(code) without saying why.")
        case 400 where answer.htmlTitle?.lowercased().contains("ssl certificate") == true:
            // nginx with ssl_verify_client answers a missing ("400 No required SSL certificate was
            // sent") or untrusted ("400 The SSL certificate error") client certificate so.
            category = .unauthenticated
            cause = "clientCertificateRefused"
            title = "Client certificate refused"
            message = "\(host) refused \(request) with “\(answer.htmlTitle ?? "400")”: it wants a TLS client certificate it trusts, and this one is missing, expired or not from its CA."
        case 403:
            category = .invalid(reason: answer.summary)
            title = "Request forbidden"
            message =
                "\(host) refused \(request) with \(answer.summary) The credentials were accepted but do not allow this, so signing in again will not help."
            next = "The job was set aside as a dead letter; grant the client the permission on the API's side, then retry it."
        case 407:
            category = .unreachable
            title = "Proxy requires sign-in"
            message = "A proxy between this host and \(host) answered \(request) with 407 Proxy Authentication Required."
            next = "Work for it waits; configure the proxy's credentials (or a route around it), and the work resumes once a probe reaches the API."
        case 408, 425:
            category = .transient
            title = "API asked to try again"
            message = "\(host) answered \(request) with \(answer.summary)"
        case 429:
            category = .rateLimited(retryAfter: answer.retryAfter)
            title = "API rate limit reached"
            message = "\(host) answered \(request) with 429 Too Many Requests" + Self.waitClause(answer)
        case 503 where answer.retryAfter != nil:
            category = .rateLimited(retryAfter: answer.retryAfter)
            title = "API unavailable for a while"
            message = "\(host) answered \(request) with 503 Service Unavailable" + Self.waitClause(answer)
        case 500...599:
            category = .transient
            title = status == 503 ? "API unavailable" : "API server error"
            message = "\(host) failed to handle \(request): \(answer.summary)"
        case 300...399 where status != 304:
            category = .unreachable
            cause = "captivePortal"
            title = "Redirected away from the API"
            let destination = answer.location.map { "redirecting to \($0)" } ?? "redirecting without a Location"
            message = "\(host) answered \(request) with \(answer.statusText), \(destination): a captive portal or proxy answers instead of the API."
            next =
                "Work for it waits; if this host must sign in to its network (a hotel or guest Wi-Fi) or goes through a proxy, sign in or fix the proxy, and the work resumes once a probe reaches the API itself."
        case 400...499:
            category = .invalid(reason: answer.summary)
            title = Self.rejectionTitle(status: status, method: method)
            message = "\(host) rejected \(request) with \(answer.summary)"
        default:
            category = .invalid(reason: "unexpected \(answer.summary)")
            title = "Unexpected answer"
            message = "\(host) answered \(request) with \(answer.summary), which this request does not expect."
        }
    }

    /// What an object store's error code says, where it says more than the status.
    private static func objectStore(
        _ error: S3ErrorBody,
        answer: ErrorAnswer,
        host: String,
        request: String
    ) -> (ErrorCategory, String, String, String, String?)? {
        let cause = "s3\(error.code)"
        let said = "\(answer.status) \(error.explanation)"
        switch error.code {
        case "SignatureDoesNotMatch":
            return (.unauthenticated, cause, "Signature refused",
                    "\(host) refused the signature of \(request) (\(said)): the secret access key is not the access key's, or the request was signed for another region.", nil)
        case "InvalidAccessKeyId":
            return (.unauthenticated, cause, "Access key unknown", "\(host) does not know the access key \(request) was signed with (\(said)).", nil)
        case "AccessDenied":
            return (.unauthenticated, cause, "Access denied",
                    "\(host) refused \(request) (\(said)): the access key may not do this (the bucket's or the key's policy).", nil)
        case "ExpiredToken", "TokenRefreshRequired":
            return (.unauthenticated, cause, "Session token expired", "\(host) refused \(request) (\(said)): the session token of the temporary credentials has expired.", nil)
        case "SlowDown":
            return (.rateLimited(retryAfter: answer.retryAfter), cause, "Object store asks to slow down",
                    "\(host) answered \(request) with \(answer.status) SlowDown" + waitClause(answer), nil)
        case "RequestTimeTooSkewed":
            let skew = error.clockSkew.map { skew in
                let off = DurationText.format(skew < .zero ? .zero - skew : skew)
                return skew < .zero ? "this host's clock is \(off) behind \(host)'s" : "this host's clock is \(off) ahead of \(host)'s"
            } ?? "this host's clock is more than 15 minutes off"
            return (.transient, cause, "Host clock is off",
                    "\(host) refused \(request) (\(said)): \(skew), and a signature is good for 15 minutes either side.",
                    "Set the clock right (timedatectl set-ntp true); uploads go on by themselves once it is.")
        case "NoSuchBucket":
            let bucket = error.bucketName.map { "bucket \"\($0)\"" } ?? "the bucket"
            return (.unreachable, cause, "Bucket not found", "\(host) has no \(bucket) (\(request): \(said)).",
                    "Work for it waits; create the bucket, or fix api.base-url and reload errorbusd: the work goes once the probe finds the bucket.")
        case "NoSuchUpload":
            // The multipart upload the parts were for is gone: the uploader starts another.
            return (.invalid(reason: "the multipart upload is gone"), cause, "Multipart upload gone", "\(host) no longer knows the multipart upload of \(request) (\(said)).", nil)
        case "EntityTooLarge":
            let sizes = error.maxSizeAllowed.map { " (at most \($0) bytes)" } ?? ""
            return (.invalid(reason: "the object is too large\(sizes)"), cause, "Upload too large", "\(host) refused \(request) as too large\(sizes): \(said).", nil)
        default:
            return nil
        }
    }

    /// ` and asked to wait 5 s: detail.` or ` without saying how long to wait.`
    private static func waitClause(_ answer: ErrorAnswer) -> String {
        let wait = answer.retryAfter.map { " and asked to wait \(DurationText.format($0))" } ?? " without saying how long to wait"
        return wait + (answer.explanation.map { ": \(ErrorAnswer.sentence($0))" } ?? ".")
    }

    private static func rejectionTitle(status: Int, method: String) -> String {
        let isUpload = ["PUT", "POST", "PATCH"].contains(method.uppercased())
        switch status {
        case 404: return isUpload ? "Upload target not found" : "Resource not found"
        case 413: return "Upload too large"
        case 409: return isUpload ? "Upload conflicts" : "Request conflicts"
        default: return isUpload ? "Upload rejected" : "Request rejected"
        }
    }
}
