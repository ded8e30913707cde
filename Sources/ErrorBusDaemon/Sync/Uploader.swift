import AsyncHTTPClient
import ErrorBusHTTP
import ErrorBusStore
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import ErrorBus
import _NIOFileSystem
import NIOCore
import NIOHTTP1
import NIOPosix

/// What uploads one job's file: ``Uploader`` in errorbusd, a fake in the dispatcher's tests.
protocol Uploading: Sendable {
    /// Uploads the file; every failure is thrown, categorised, for the bus.
    func upload(_ job: OutboxFile) async throws
}

/// Uploads one outbox file: `PUT {items}/{id}` with the file streamed from disk, the content key
/// as `Idempotency-Key` and the current bearer token. Knows nothing of retries: every failure is
/// thrown, categorised, for the bus. A success whose rate-limit fields say the quota is spent
/// (`RateLimit: …;r=0;t=30`, `X-RateLimit-Remaining: 0`) has the bus pace the API's scope until
/// the reset, so the next upload does not meet a `429`.
final class Uploader: Uploading {
    let http: HTTPClient
    let auth: AuthService
    let bus: ErrorBus
    let itemsURL: String
    let scope: String
    let requestTimeout: Duration
    let classify: [ClassificationOverride]

    init(http: HTTPClient, auth: AuthService, bus: ErrorBus, settings: SyncService.Settings) {
        self.http = http
        self.auth = auth
        self.bus = bus
        self.itemsURL = settings.itemsURL
        self.scope = settings.host
        self.requestTimeout = settings.requestTimeout
        self.classify = settings.classify
    }

    /// Files are read and sent in chunks of this size, never whole.
    static let chunkLength: Int64 = 64 * 1024

    func upload(_ job: OutboxFile) async throws {
        let token = try await auth.accessToken()
        do {
            try await put(job, token: token)
        } catch let failure as HTTPFailure where failure.category.kind == .unauthenticated {
            // Refused with a token the realm's re-authentication has since replaced (the request
            // left before the renewal finished): the new token has not been refused yet, so try
            // it once rather than starting another re-authentication.
            guard let current = await auth.currentToken, current != token else { throw failure }
            try await put(job, token: current)
        }
    }

    private func put(_ job: OutboxFile, token: String) async throws {
        let url = "\(itemsURL)/\(job.id)"
        var request = HTTPClientRequest(url: url)
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Idempotency-Key", value: job.id)
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        if job.size <= Self.chunkLength {
            // One chunk: read whole (from the kernel's caches, or in one job on the blocking-I/O
            // pool), and sent as one buffer without a body stream.
            do {
                request.body = .bytes(try await Self.contents(of: job))
            } catch let error as SystemCallError {
                throw OutboxFileFailure(error, job: job)
            }
            try await send(request, id: job.id, url: url)
        } else {
            do {
                try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(job.path)) { handle in
                    let size = try await handle.info().size
                    guard size == job.size else { throw OutboxFileFailure.changed(job, size: size) }
                    request.body = .stream(handle.readChunks(chunkLength: .bytes(Self.chunkLength)), length: .known(size))
                    try await send(request, id: job.id, url: url)
                }
            } catch let error as FileSystemError {
                throw OutboxFileFailure(error, job: job)
            }
        }
    }

    /// What the API answers a stored item with (`{"id","bytes","sha256","versions"}`).
    private struct Receipt: Decodable {
        let id: String
    }

    private func send(_ request: HTTPClientRequest, id: String, url: String) async throws {
        let deadline = NIODeadline.now() + TimeAmount(requestTimeout)
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, deadline: deadline)
        } catch {
            throw HTTPFailure(classifying: error, method: "PUT", url: url)
        }
        guard response.status == .created || response.status == .ok else {
            throw await HTTPFailure.classifying(response, method: "PUT", url: url, deadline: deadline).overridden(by: classify)
        }
        if let pause = RateLimitFields(headers: response.headers)?.pause {
            bus.pace(scope: scope, for: pause)
        }
        // Only the API's receipt for this item says that the API has it. A 2xx with anything
        // else (a captive portal's or a proxy's page) is no delivery: taking it for one would
        // remove a file the API never received.
        _ = try await response.decodeBody(as: Receipt.self, deadline: deadline, method: "PUT", url: url, expected: "the item's receipt") {
            $0.id == id ? nil : "the receipt for item \(id) (it named \($0.id))"
        }
    }

    /// The whole content of a job's file of at most one chunk, checked against the size it had
    /// when it was queued.
    private static func contents(of job: OutboxFile) async throws -> ByteBuffer {
        // One byte more than expected tells a file that grew.
        let read = try await OutboxFileReader.contents(of: job.path, capacity: Int(job.size) + 1)
        guard read.readableBytes == job.size else { throw OutboxFileFailure.changed(job, size: Int64(read.readableBytes)) }
        return read
    }
}

/// A local problem with an outbox file: gone, changed, unreadable.
struct OutboxFileFailure: CategorizedError {
    let category: ErrorCategory
    let cause: String
    let message: String
    let scope: String?

    init(_ error: FileSystemError, job: OutboxFile) {
        switch error.code {
        case .notFound: self = .gone(job)
        case .permissionDenied: self = .permissionDenied(job)
        default: self = .unreadable(job, error.message)
        }
    }

    init(_ error: SystemCallError, job: OutboxFile) {
        switch error.errnoCode {
        case ENOENT: self = .gone(job)
        case EACCES, EPERM: self = .permissionDenied(job)
        default: self = .unreadable(job, error.reason)
        }
    }

    static func gone(_ job: OutboxFile) -> OutboxFileFailure {
        OutboxFileFailure(
            category: .invalid(reason: "the file is gone"),
            cause: "fileGone",
            message: "\(job.fileName) was removed from the outbox before it could be uploaded.",
            scope: nil
        )
    }

    static func permissionDenied(_ job: OutboxFile) -> OutboxFileFailure {
        OutboxFileFailure(category: .fatal, cause: "permissionDenied", message: "errorbusd may not read \(job.path): permission denied.", scope: "sync")
    }

    static func unreadable(_ job: OutboxFile, _ reason: String) -> OutboxFileFailure {
        OutboxFileFailure(category: .fatal, cause: "outboxUnreadable", message: "Could not read \(job.path): \(reason)", scope: "sync")
    }

    static func changed(_ job: OutboxFile, size: Int64) -> OutboxFileFailure {
        OutboxFileFailure(
            category: .invalid(reason: "the file changed after it was queued"),
            cause: "fileChanged",
            message: "\(job.fileName) changed after it was queued (\(job.size) bytes then, \(size) now): write files elsewhere and rename them into the outbox when complete.",
            scope: nil
        )
    }

    private init(category: ErrorCategory, cause: String, message: String, scope: String?) {
        self.category = category
        self.cause = cause
        self.message = message
        self.scope = scope
    }

    var operatorText: OperatorText {
        OperatorText(title: category.kind == .fatal ? "Outbox unreadable" : "Outbox file unusable", message: message)
    }
}
