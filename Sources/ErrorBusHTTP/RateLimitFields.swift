#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import Logging
public import NIOHTTP1
import RawStructuredFieldValues

/// What an answer says of the client's rate limit: how many requests remain in the current
/// window and when the quota is restored. Read from, in this order:
///
/// - the IETF `RateLimit` field (draft-ietf-httpapi-ratelimit-headers, a Structured Field List,
///   RFC 8941: `RateLimit: "default";r=0;t=30`, remaining `r`, reset `t` seconds) and
///   `RateLimit-Policy` (`"default";q=100;w=60`, quota `q` per window `w`);
/// - the draft's earlier dictionary form (`RateLimit: limit=100, remaining=0, reset=30`) and
///   separate fields (`RateLimit-Remaining`, `RateLimit-Reset`, `RateLimit-Limit`);
/// - the common `X-RateLimit-Remaining` and `X-RateLimit-Reset` (delta seconds, or, as GitHub
///   sends it, a Unix time).
///
/// A value that does not parse is ignored (and told at debug level): a client must not trust a
/// hint it cannot read, and must not fail over one either.
public struct RateLimitFields: Sendable, Equatable {
    /// Requests left in the current window.
    public var remaining: Int?
    /// Until the quota is restored.
    public var reset: Duration?
    /// Requests allowed per window.
    public var quota: Int?
    /// The window's length.
    public var window: Duration?

    /// Fields with the values given; ``init(headers:now:logger:)`` reads them from an answer.
    public init(remaining: Int? = nil, reset: Duration? = nil, quota: Int? = nil, window: Duration? = nil) {
        self.remaining = remaining
        self.reset = reset
        self.quota = quota
        self.window = window
    }

    /// How long to wait before the next request so as not to exceed the limit: the reset once
    /// nothing remains; `nil` while requests remain or the answer says nothing usable.
    public var pause: Duration? {
        guard remaining == 0, let reset, reset > .zero else { return nil }
        return reset
    }

    /// The fields of an answer's `headers`, or `nil` when it has none (or none that parse).
    public init?(headers: HTTPHeaders, now: Date = Date(), logger: Logger? = nil) {
        var fields = RateLimitFields()
        func ignore(_ name: String, _ value: String, _ why: String) {
            logger?.debug("ignoring \(name): \(value): \(why)")
        }
        if let value = Self.combined(headers, "RateLimit") {
            if let parsed = Self.parseList(value, complain: { ignore("RateLimit", value, $0) }) ?? Self.parseDictionary(value) {
                fields.remaining = parsed.remaining
                fields.reset = parsed.reset
                fields.quota = parsed.quota
            } else {
                ignore("RateLimit", value, "neither the draft's list nor its dictionary form")
            }
        }
        if let value = Self.combined(headers, "RateLimit-Policy") {
            if let policy = Self.parsePolicy(value) {
                fields.quota = fields.quota ?? policy.quota
                fields.window = policy.window
            } else {
                ignore("RateLimit-Policy", value, "not a list of policies with q and w")
            }
        }
        for (name, legacy) in [("RateLimit", false), ("X-RateLimit", true)] {
            if fields.remaining == nil, let value = headers.first(name: name + "-Remaining") {
                if let number = Self.nonNegativeInteger(value) { fields.remaining = number } else { ignore(name + "-Remaining", value, "not a count") }
            }
            if fields.reset == nil, let value = headers.first(name: name + "-Reset") {
                if let reset = Self.reset(value, unixTimeAllowed: legacy, now: now) { fields.reset = reset } else { ignore(name + "-Reset", value, "not seconds") }
            }
            if fields.quota == nil, let value = headers.first(name: name + "-Limit") {
                if let number = Self.nonNegativeInteger(value) { fields.quota = number } else { ignore(name + "-Limit", value, "not a count") }
            }
        }
        guard fields != RateLimitFields() else { return nil }
        self = fields
    }

    /// Every line of a field, joined as one list (RFC 9110 §5.3).
    private static func combined(_ headers: HTTPHeaders, _ name: String) -> String? {
        let values = headers[name]
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// `"default";r=0;t=30`: the first item of the list that has `r` or `t` (the draft lets a
    /// server name several policies; the most constraining comes first in practice, and any one
    /// with nothing left is reason enough to pause).
    private static func parseList(_ value: String, complain: (String) -> Void) -> RateLimitFields? {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let list = try? parser.parseListFieldValue() else { return nil }
        var best: RateLimitFields?
        for member in list {
            guard case .item(let item) = member else { continue }
            for key in ["r", "t"] where item.rfc9651Parameters[key] != nil && integer(item.rfc9651Parameters[key]) == nil {
                complain("\(key) is not a non-negative integer")
            }
            let remaining = integer(item.rfc9651Parameters["r"])
            let reset = integer(item.rfc9651Parameters["t"]).map { Duration.seconds($0) }
            guard remaining != nil || reset != nil else { continue }
            let fields = RateLimitFields(remaining: remaining, reset: reset)
            // The policy with the fewest requests left decides.
            if best == nil || (remaining ?? Int.max) < (best?.remaining ?? Int.max) { best = fields }
        }
        return best
    }

    /// `limit=100, remaining=0, reset=30`.
    private static func parseDictionary(_ value: String) -> RateLimitFields? {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue() else { return nil }
        func member(_ key: String) -> Int? {
            guard case .item(let item)? = dictionary[key] else { return nil }
            return integer(item.rfc9651BareItem)
        }
        let fields = RateLimitFields(remaining: member("remaining"), reset: member("reset").map { .seconds($0) }, quota: member("limit"))
        return fields.remaining == nil && fields.reset == nil ? nil : fields
    }

    /// `"default";q=100;w=60`: the first policy's quota and window.
    private static func parsePolicy(_ value: String) -> (quota: Int?, window: Duration?)? {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let list = try? parser.parseListFieldValue() else { return nil }
        for member in list {
            guard case .item(let item) = member else { continue }
            let quota = integer(item.rfc9651Parameters["q"])
            let window = integer(item.rfc9651Parameters["w"]).map { Duration.seconds($0) }
            if quota != nil || window != nil { return (quota, window) }
        }
        return nil
    }

    private static func integer(_ item: RFC9651BareItem?) -> Int? {
        guard case .integer(let value)? = item, value >= 0 else { return nil }
        return Int(exactly: value)
    }

    private static func nonNegativeInteger(_ text: String) -> Int? {
        let trimmed = text.trimmingASCIIWhitespace()
        guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(trimmed)
    }

    /// Delta seconds; with `unixTimeAllowed`, a value past 10⁹ (September 2001) is a Unix time,
    /// as GitHub's `X-RateLimit-Reset` is.
    private static func reset(_ text: String, unixTimeAllowed: Bool, now: Date) -> Duration? {
        guard let number = nonNegativeInteger(text) else { return nil }
        if unixTimeAllowed && number > 1_000_000_000 {
            return .seconds(max(0, Double(number) - now.timeIntervalSince1970))
        }
        return .seconds(number)
    }
}
