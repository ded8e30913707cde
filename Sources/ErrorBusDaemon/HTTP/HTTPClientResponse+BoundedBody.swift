public import AsyncHTTPClient
public import NIOCore
import ErrorBus
import NIOHTTP1

extension HTTPClientResponse {
    /// Reads the whole body into memory, but never more than `limit` bytes and never past
    /// `deadline`.
    ///
    /// AsyncHTTPClient's request deadline ends when the answer's head arrives, and its read
    /// timeout restarts with every byte: a body trickled a byte at a time, or one that never
    /// ends, would hold the caller forever. This bounds both memory and time. A `Content-Length`
    /// over the limit fails at once, without reading.
    ///
    /// - Parameters:
    ///   - limit: the most bytes accepted, e.g. ``HTTPFailure/errorBodyLimit`` for an error
    ///     body, a configured limit for a resource.
    ///   - deadline: when reading gives up; usually the request's own deadline.
    ///   - method: the request method, for the failure.
    ///   - url: the request URL, for the failure.
    /// - Throws: ``HTTPFailure``: `bodyTooLarge` (invalid) over the limit, `deadlineExceeded`
    ///   (transient) past the deadline, or the classified connection error (`connectionReset`
    ///   for a body cut short, …).
    public func collectBody(upTo limit: Int, deadline: NIODeadline, method: String, url: String) async throws(HTTPFailure) -> ByteBuffer {
        let announced = headers.first(name: "Content-Length").flatMap { Int($0) }
        if let announced, announced > limit {
            throw HTTPFailure.bodyTooLarge(method: method, url: url, status: Int(status.code), limit: limit, announced: announced)
        }
        let body = self.body
        do {
            let collected = try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
                group.addTask { try await body.collect(upTo: limit) }
                group.addTask {
                    let remaining = deadline - NIODeadline.now()
                    try await Task.sleep(for: .nanoseconds(max(0, remaining.nanoseconds)))
                    return nil
                }
                // The first to finish decides; cancelling the other stops the download (the body
                // stream cancels its request) or the timer.
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let collected else {
                throw HTTPFailure(
                    category: .transient,
                    cause: "deadlineExceeded",
                    method: method,
                    url: url,
                    text: .init(
                        title: "API answer too slow",
                        message: "\(RequestTarget(url: url).host) did not finish sending the answer to \(method) \(RequestTarget(url: url).pathAndQuery) before its deadline."
                    ),
                    status: Int(status.code)
                )
            }
            return collected
        } catch let failure as HTTPFailure {
            throw failure
        } catch is NIOTooManyBytesError {
            throw HTTPFailure.bodyTooLarge(method: method, url: url, status: Int(status.code), limit: limit)
        } catch {
            var failure = HTTPFailure(classifying: error, method: method, url: url)
            failure.status = Int(status.code)
            throw failure
        }
    }
}
