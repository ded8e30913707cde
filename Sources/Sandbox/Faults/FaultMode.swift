/// What a faulted route does instead of answering normally (compiled from a ``FaultSpec``).
enum FaultMode: Sendable, Equatable {
    /// Answer normally (lets a newer rule exempt one route from an `all` rule).
    case none
    /// Read the request, then reset the connection (TCP RST). With `afterBytes`, only a request
    /// whose body passes that many bytes is reset, as soon as it does (a balancer or proxy that
    /// cuts big uploads half way); smaller ones are served. Done by ``ConnectionResetHandler``.
    case down(afterBytes: Int?)
    /// An error status with an RFC 9457 body and, optionally, `Retry-After`.
    case status(Status)
    /// The token endpoint answers 401 `invalid_client`.
    case rejectCredentials
    /// 200 with a body that is not what the client expects, in the wrong content type.
    case garbage
    /// 201 with a well-formed receipt for another item than the one sent (a proxy's or cache's
    /// mix-up): a client that checks receipts must not take it for a delivery.
    case wrongReceipt
    /// 200 whose `Content-Length` promises more than is sent before the connection closes.
    case truncated
    /// A captive portal: a redirect to `/login`, or its HTML page served in place of the answer.
    case captivePortal(Portal)
    /// The real answer, late: delayed before the head, or trickled out over the delay.
    case slow(Slow)
    /// 200 with an endless (or multi-gigabyte) streamed body.
    case huge(byteCount: Int?)
}

extension FaultMode {
    /// Parameters of ``FaultMode/status(_:)``.
    struct Status: Sendable, Equatable {
        var status: Int
        var retryAfter: RetryAfter?
        var detail: String?
    }

    /// How a `Retry-After` header is written.
    enum RetryAfter: Sendable, Equatable {
        /// delta-seconds.
        case seconds(Int)
        /// An IMF-fixdate this many seconds after the wall-clock time of the answer.
        case httpDate(secondsFromNow: Int)
        /// Exactly this text (lets tests send malformed hints too).
        case verbatim(String)
    }

    /// The two faces of a captive portal.
    enum Portal: String, Sendable, Equatable, Codable {
        /// `302 Found` to `/login`.
        case redirect
        /// `200 OK` with the portal's HTML page.
        case page
    }

    /// Parameters of ``FaultMode/slow(_:)``.
    struct Slow: Sendable, Equatable {
        /// How long the answer is held back.
        var delay: Duration
        /// Send the head at once and spread the body over `delay` instead of delaying the head.
        var trickle: Bool
    }
}
