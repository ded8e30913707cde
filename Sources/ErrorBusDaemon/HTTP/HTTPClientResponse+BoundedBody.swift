public import AsyncHTTPClient
public import NIOCore
import ErrorBus
import NIOHTTP1
import NIOPosix
import Synchronization

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
        // The body is read in a task of its own that the deadline, a timer on an event loop,
        // cancels (cancelling it stops the download: the body stream cancels its request). A
        // child task and a `Task.sleep` beside it cost twice as much per request.
        let reading = Task { try await body.collect(upTo: limit) }
        let timer = BodyDeadline(reading)
        let scheduled = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(deadline: deadline) { timer.expire() }
        let result = await withTaskCancellationHandler {
            await reading.result
        } onCancel: {
            reading.cancel()
        }
        scheduled.cancel()
        // Whatever the download came to once the deadline passed (an error, or a body cut
        // short), the answer was too slow.
        guard !timer.expired else {
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
        do {
            return try result.get()
        } catch is NIOTooManyBytesError {
            throw HTTPFailure.bodyTooLarge(method: method, url: url, status: Int(status.code), limit: limit)
        } catch {
            var failure = HTTPFailure(classifying: error, method: method, url: url)
            failure.status = Int(status.code)
            throw failure
        }
    }
}

/// Cancels a body download when its deadline passes, and remembers that it did.
private final class BodyDeadline: Sendable {
    private let task: Task<ByteBuffer, any Error>
    private let state = Atomic<Bool>(false)

    init(_ task: Task<ByteBuffer, any Error>) { self.task = task }

    var expired: Bool { state.load(ordering: .acquiring) }

    func expire() {
        state.store(true, ordering: .releasing)
        task.cancel()
    }
}
