public import AsyncHTTPClient
public import NIOCore
import NIOHTTP1

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension HTTPFailure {
    /// Classifies an answer whose status the request did not expect, reading at most
    /// ``errorBodyLimit`` of its body before `deadline` to explain it.
    ///
    /// The body only adds words (a problem's detail, an OAuth error): when it is too large,
    /// too slow or cut short, the failure is classified from the status and headers alone.
    ///
    /// ```swift
    /// let response = try await client.execute(request, deadline: deadline)
    /// guard response.status == .created || response.status == .ok else {
    ///     throw await HTTPFailure.classifying(response, method: "PUT", url: url, deadline: deadline)
    /// }
    /// ```
    public static func classifying(
        _ response: HTTPClientResponse,
        method: String,
        url: String,
        deadline: NIODeadline,
        now: Date = Date()
    ) async -> HTTPFailure {
        let body = try? await response.collectBody(upTo: errorBodyLimit, deadline: deadline, method: method, url: url)
        return HTTPFailure(status: Int(response.status.code), headers: response.headers, body: body, method: method, url: url, now: now)
    }
}
