public import AsyncHTTPClient
public import Logging
public import NIOCore
public import NIOHTTP1

extension HTTPClient {
    /// Executes `request` and hands back its answer if its status is one of `accepted`;
    /// otherwise throws what went wrong as the bus reads it: one call instead of a
    /// classification around each of a request's steps.
    ///
    /// - The client throws (refused, DNS, TLS, timeouts, resets, the deadline):
    ///   ``HTTPFailure/init(classifying:method:url:)``.
    /// - The status is not one of `accepted` (a `503` and its `Retry-After`, a `401`, a `4xx`
    ///   and its problem details, a redirect): ``HTTPFailure/classifying(_:method:url:deadline:now:)``,
    ///   which reads a little of the body to explain it, then `overrides`
    ///   (``HTTPFailure/overridden(by:)``).
    ///
    /// The method and URL the failures name are the request's own. The answer's body is read
    /// through the ``AcceptedResponse`` returned, before the same `deadline`:
    ///
    /// ```swift
    /// let answer = try await client.execute(request, accepting: [.created], deadline: .now() + .seconds(30))
    /// let receipt = try await answer.decodeBody(as: Receipt.self, expected: "a JSON receipt")
    /// ```
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - accepted: the statuses that answer it (compared by code).
    ///   - deadline: when the request gives up, for the answer's head and, read through the
    ///     answer, for its body.
    ///   - overrides: an administrator's rules for this API's statuses.
    ///   - logger: AsyncHTTPClient's request logger; none by default.
    /// - Throws: ``HTTPFailure``, classified.
    public func execute(
        _ request: HTTPClientRequest,
        accepting accepted: [HTTPResponseStatus],
        deadline: NIODeadline,
        overrides: [ClassificationOverride] = [],
        logger: Logger? = nil
    ) async throws(HTTPFailure) -> AcceptedResponse {
        try await RoutedHTTPClient(self).execute(request, accepting: accepted, deadline: deadline, overrides: overrides, logger: logger)
    }
}
