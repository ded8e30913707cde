public import AsyncHTTPClient
public import NIOCore
import ErrorBus
import NIOHTTP1
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
        // The body is read in a task of its own that the deadline (``DeadlineSweeper``, one
        // event-loop timer for every body) cancels: cancelling it stops the download, as the
        // body stream cancels its request. Unstructured because the sweeper needs a handle it
        // can cancel from an event-loop thread, which a task group's child does not give; it is
        // still scoped to this call: awaited below, and cancelled with the caller (the handler)
        // or by the sweeper. A task group with a `Task.sleep` child beside the read did the
        // same at twice the cost per request. Whichever of the read and the deadline ends first
        // decides, so a body read in time is never thrown away because the deadline passed
        // before this task looked.
        let race = BodyDeadline()
        let reading = Task { () async throws -> ByteBuffer in
            do {
                let collected = try await body.collect(upTo: limit)
                // A read the timer cancelled may end "successfully" with part of the body.
                guard race.finish() else { throw CancellationError() }
                return collected
            } catch {
                _ = race.finish()
                throw error
            }
        }
        let timer = DeadlineSweeper.shared.add(deadline) {
            if race.expire() { reading.cancel() }
        }
        let result = await withTaskCancellationHandler {
            await reading.result
        } onCancel: {
            reading.cancel()
        }
        DeadlineSweeper.shared.remove(timer)
        guard !race.expired else {
            let target = RequestTarget(url: url)
            throw HTTPFailure(
                category: .transient,
                cause: "deadlineExceeded",
                method: method,
                url: url,
                text: .init(
                    title: "API answer too slow",
                    message: "\(target.host) did not finish sending the answer to \(method) \(target.pathAndQuery) before its deadline."
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

/// The race between reading a body and its deadline: the first to end wins.
private final class BodyDeadline: Sendable {
    private static let (running, finished, expiredState) = (UInt8(0), UInt8(1), UInt8(2))
    private let state = Atomic<UInt8>(0)

    /// The read ended (with the body or an error); `false` when the deadline had won.
    func finish() -> Bool {
        state.compareExchange(expected: Self.running, desired: Self.finished, ordering: .acquiringAndReleasing).exchanged
    }

    /// The deadline passed; `true` when the read had not ended yet (cancel it).
    func expire() -> Bool {
        state.compareExchange(expected: Self.running, desired: Self.expiredState, ordering: .acquiringAndReleasing).exchanged
    }

    /// Whether the deadline won.
    var expired: Bool { state.load(ordering: .acquiring) == Self.expiredState }
}
