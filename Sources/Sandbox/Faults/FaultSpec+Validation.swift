extension FaultSpec {
    /// The modes the admin API knows, for error messages and the docs.
    static let modes = [
        "none", "down", "status", "invalid", "rejectCredentials", "garbage", "wrongReceipt", "truncated", "captivePortal", "slow", "huge",
        "expireTokens",
    ]

    /// Checks the spec and turns it into what the sandbox executes.
    ///
    /// - Throws: ``ProblemDetails`` (400) saying which field is wrong and why.
    func command() throws(ProblemDetails) -> FaultCommand {
        let route = try parsedRoute()
        let schedule = try parsedSchedule()
        let mode: FaultMode
        switch self.mode {
        case "expireTokens":
            guard after == nil, self.for == nil, flap == nil else {
                throw .badFault("expireTokens is a one-shot action: it takes no schedule (after, for, flap)")
            }
            return .expireTokens
        case "none":
            mode = .none
        case "down":
            if let bytes, bytes < 0 { throw .badFault("bytes must not be negative") }
            mode = .down(afterBytes: bytes)
        case "status":
            guard let status, (400...599).contains(status) else {
                throw .badFault("mode status needs a status between 400 and 599")
            }
            mode = .status(FaultMode.Status(status: status, retryAfter: try parsedRetryAfter(), detail: detail))
        case "invalid":
            let status = self.status ?? 422
            guard (400...499).contains(status) else { throw .badFault("mode invalid needs a 4xx status (default 422)") }
            let detail = self.detail ?? "The sandbox was told to reject this request as invalid."
            mode = .status(FaultMode.Status(status: status, retryAfter: try parsedRetryAfter(), detail: detail))
        case "rejectCredentials":
            guard route == nil || route == .token else {
                throw .badFault("rejectCredentials applies to the token route (or all)")
            }
            mode = .rejectCredentials
        case "garbage":
            mode = .garbage
        case "wrongReceipt":
            mode = .wrongReceipt
        case "truncated":
            mode = .truncated
        case "captivePortal":
            mode = .captivePortal(portal ?? .redirect)
        case "slow":
            guard let delayMs, delayMs >= 0, delayMs <= 3_600_000 else {
                throw .badFault("mode slow needs delayMs between 0 and 3600000")
            }
            mode = .slow(FaultMode.Slow(delay: .milliseconds(delayMs), trickle: trickle ?? false))
        case "huge":
            if let bytes, bytes < 0 { throw .badFault("bytes must not be negative") }
            mode = .huge(byteCount: bytes)
        default:
            throw .badFault("unknown mode '\(self.mode)'; known modes: \(Self.modes.joined(separator: ", "))")
        }
        return .rule(route: route, mode: mode, schedule: schedule)
    }

    private func parsedRoute() throws(ProblemDetails) -> SandboxRoute? {
        guard let route, route != "all" else { return nil }
        guard let parsed = SandboxRoute(rawValue: route), parsed.isFaultable else {
            throw .badFault("unknown route '\(route)'; known routes: token, items, resources, healthz, all")
        }
        return parsed
    }

    private func parsedSchedule() throws(ProblemDetails) -> FaultSchedule {
        var schedule = FaultSchedule()
        if let after { schedule.after = try Self.duration(after, field: "after") }
        if let length = self.for {
            schedule.length = try Self.duration(length, field: "for")
            guard schedule.length! > .zero else { throw .badFault("for must be positive") }
        }
        if let flap {
            let on = try Self.duration(flap.on, field: "flap.on")
            let off = try Self.duration(flap.off, field: "flap.off")
            guard on > .zero, off > .zero else { throw .badFault("flap.on and flap.off must be positive") }
            schedule.flap = (on, off)
        }
        if let share {
            guard share > 0, share <= 1 else { throw .badFault("share must be above 0 and at most 1") }
            schedule.share = share
        }
        return schedule
    }

    private func parsedRetryAfter() throws(ProblemDetails) -> FaultMode.RetryAfter? {
        switch (retryAfter, retryAfterForm ?? "seconds") {
        case (nil, _):
            return nil
        case (.text(let text), _):
            return .verbatim(text)
        case (.seconds(let seconds), _) where seconds < 0:
            throw .badFault("retryAfter must not be negative")
        case (.seconds(let seconds), "seconds"):
            return .seconds(seconds)
        case (.seconds(let seconds), "httpDate"):
            return .httpDate(secondsFromNow: seconds)
        case (.seconds, let form):
            throw .badFault("unknown retryAfterForm '\(form)'; use seconds or httpDate")
        }
    }

    private static func duration(_ seconds: Double, field: String) throws(ProblemDetails) -> Duration {
        guard seconds.isFinite, seconds >= 0, seconds <= 31_536_000 else {
            throw .badFault("\(field) must be a number of seconds between 0 and one year")
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
