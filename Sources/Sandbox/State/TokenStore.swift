/// The access tokens the sandbox has issued and when each stops being valid.
struct TokenStore: Sendable {
    /// What a presented token turned out to be.
    enum Validity: Equatable {
        case valid
        case expired
        case unknown
    }

    /// Tokens kept before expired ones are forgotten (they then read as unknown rather than expired).
    private static let pruneThreshold = 10_000

    private var expiries: [String: Duration] = [:]
    /// How many tokens were issued since the sandbox started.
    private(set) var issued = 0

    /// Records `token`, valid until `expiry`.
    mutating func issue(_ token: String, expiresAt expiry: Duration, now: Duration) {
        if expiries.count >= Self.pruneThreshold {
            expiries = expiries.filter { $0.value > now }
        }
        expiries[token] = expiry
        issued += 1
    }

    /// Whether `token` may be used at `now`.
    func validate(_ token: String, at now: Duration) -> Validity {
        guard let expiry = expiries[token] else { return .unknown }
        return now < expiry ? .valid : .expired
    }

    /// Makes every issued token invalid at once; returns how many were still valid.
    mutating func expireAll(at now: Duration) -> Int {
        var expired = 0
        for (token, expiry) in expiries where expiry > now {
            expiries[token] = now
            expired += 1
        }
        return expired
    }

    /// How many tokens are valid at `now`.
    func activeCount(at now: Duration) -> Int {
        expiries.values.count(where: { $0 > now })
    }
}
