/// A fault as the admin API takes and shows it (`POST /admin/faults`, `GET /admin/faults`).
///
/// Flat on purpose, so a `curl -d` line stays short: `mode` picks the behaviour and only the
/// fields that mode reads matter. `after`, `for` and `flap` schedule it relative to the moment the
/// sandbox receives it. See `docs/sandbox.md`.
struct FaultSpec: Codable, Sendable, Equatable {
    /// A `Retry-After` value: a number is delta-seconds, a string is sent as it is.
    enum RetryAfterValue: Codable, Sendable, Equatable {
        case seconds(Int)
        case text(String)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let seconds = try? container.decode(Int.self) {
                self = .seconds(seconds)
            } else {
                self = .text(try container.decode(String.self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .seconds(let seconds): try container.encode(seconds)
            case .text(let text): try container.encode(text)
            }
        }
    }

    /// Fault on for `on` seconds, off for `off` seconds, repeating (until `for` runs out).
    struct Flap: Codable, Sendable, Equatable {
        var on: Double
        var off: Double
    }

    /// `token`, `items`, `resources`, `healthz` or `all` (the default).
    var route: String?
    /// `none`, `down`, `status`, `invalid`, `rejectCredentials`, `garbage`, `wrongReceipt`,
    /// `truncated`, `captivePortal`, `slow`, `huge`, or the one-shot action `expireTokens`.
    var mode: String
    /// `status`: the code (400–599); `invalid`: a 4xx code other than the default 422.
    var status: Int?
    /// `status`/`invalid`: the `Retry-After` header.
    var retryAfter: RetryAfterValue?
    /// `seconds` (the default) or `httpDate`: how a numeric `retryAfter` is written.
    var retryAfterForm: String?
    /// `status`/`invalid`: the problem's `detail`, the text the daemon should show the operator.
    var detail: String?
    /// `slow`: the delay in milliseconds.
    var delayMs: Int?
    /// `slow`: trickle the body over the delay instead of delaying the head.
    var trickle: Bool?
    /// `captivePortal`: `redirect` (the default) or `page`.
    var portal: FaultMode.Portal?
    /// `huge`: the declared and streamed body size; absent means endless (chunked). `down`: reset
    /// only a request whose body passes this many bytes, once it does.
    var bytes: Int?
    /// Seconds from now until the fault starts (default 0).
    var after: Double?
    /// Seconds the fault lasts once started; absent means until cleared.
    var `for`: Double?
    /// Alternate between faulty and healthy while the fault lasts.
    var flap: Flap?
    /// The share of requests the fault applies to, drawn at random for each (above 0, at most 1;
    /// default 1): one bad backend of three behind a balancer is `1/3`. The others go on to the
    /// next rule, or are served.
    var share: Double?
}
