import Hummingbird
import Logging

/// Wraps the API: applies the fault in force for each request's route and counts every request
/// (outside `/admin`) by route and outcome.
///
/// `down` is not applied here: ``ConnectionResetHandler`` resets those requests before they reach
/// the router. A request that got past it because its fault started a moment later is answered
/// normally, which is what a server going down mid-flight does too.
struct FaultInjectionMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    let state: SandboxState

    func handle(
        _ request: Request,
        context: Context,
        next: @concurrent (Request, Context) async throws -> Response
    ) async throws -> Response {
        let route = SandboxRoute(path: request.uri.path)
        guard route != .admin else { return try await next(request, context) }
        let arrival = state.clock.now
        let fault = route.isFaultable ? state.activeFault(for: route, at: arrival) : nil
        let response: Response
        do {
            response = try await answer(request, context: context, route: route, fault: fault, next: next)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            // A body cut by a `down` fault past its bytes: the reset is counted where it is made
            // (ConnectionResetHandler), not again as this request's 500.
            if case .down(afterBytes: .some) = fault { throw error }
            state.record(route: route, method: request.method.rawValue, outcome: .status(500), arrival: arrival)
            throw error
        }
        state.record(route: route, method: request.method.rawValue, outcome: .status(response.status.code), arrival: arrival)
        return response
    }

    /// A normal answer, within the API's capacity: late when it waited for a slot, a 503 when it
    /// was shed.
    private func served(
        _ request: Request,
        context: Context,
        route: SandboxRoute,
        next: @concurrent (Request, Context) async throws -> Response
    ) async throws -> Response {
        switch await state.capacity.admit(route, at: state.clock.now) {
        case .unlimited:
            return try await next(request, context)
        case .shed(let retryAfter):
            return Self.statusResponse(
                .init(status: 503, retryAfter: .seconds(retryAfter), detail: "Over capacity: the request was shed; try again later."),
                instance: request.uri.path
            )
        case .overQuota(let quota):
            var response = Self.statusResponse(
                .init(status: 429, retryAfter: .seconds(Int(quota.reset.seconds.rounded(.up))), detail: "Over quota: \(quota.limit) requests per \(quota.window); try again after the reset."),
                instance: request.uri.path
            )
            Self.tell(quota, in: &response)
            return response
        case .admitted(let quota):
            defer { state.capacity.release(at: state.clock.now) }
            let service = state.capacity.service
            if service > .zero { try await state.clock.sleep(for: service) }
            var response = try await next(request, context)
            if let quota { Self.tell(quota, in: &response) }
            return response
        }
    }

    private func answer(
        _ request: Request,
        context: Context,
        route: SandboxRoute,
        fault: FaultMode?,
        next: @concurrent (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let fault else { return try await served(request, context: context, route: route, next: next) }
        context.logger.debug("fault", metadata: ["sandbox.route": "\(route)", "sandbox.fault": "\(fault)"])
        switch fault {
        case .none, .down:
            return try await served(request, context: context, route: route, next: next)
        case .status(let status):
            return Self.statusResponse(status, instance: request.uri.path)
        case .rejectCredentials:
            guard route == .token else { return try await next(request, context) }
            return OAuthError.invalidClient("The sandbox was told to reject every client's credentials.").response()
        case .garbage:
            return Self.garbageResponse()
        case .wrongReceipt:
            return Self.wrongReceiptResponse()
        case .truncated:
            return Self.truncatedResponse()
        case .captivePortal(.redirect):
            return Response.redirect(to: "/login", type: .found)
        case .captivePortal(.page):
            return SandboxAPI.portalPage()
        case .slow(let slow) where slow.trickle:
            let response = try await next(request, context)
            guard response.body.contentLength != 0 else {
                // Nothing to trickle (204, 304): hold the whole answer back instead.
                try await state.clock.sleep(for: slow.delay)
                return response
            }
            return Self.trickled(response, over: slow.delay, clock: state.clock)
        case .slow(let slow):
            try await state.clock.sleep(for: slow.delay)
            return try await next(request, context)
        case .huge(let byteCount):
            return Self.hugeResponse(byteCount: byteCount)
        }
    }
}
