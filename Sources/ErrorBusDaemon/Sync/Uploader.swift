import AsyncHTTPClient
import Foundation
import ErrorBusHTTP
import ErrorBusStore
import ErrorBusSupport
import ErrorBusUnits
#if canImport(Glibc)
import Glibc
#endif
import ErrorBus
import Logging
import _NIOFileSystem
import NIOCore
import NIOHTTP1
import NIOPosix

/// What uploads one job's file: ``Uploader`` in errorbusd, a fake in the dispatcher's tests.
protocol Uploading: Sendable {
    /// Uploads the file of a job queued at `queuedAt`; every failure is thrown, categorised, for
    /// the bus. Returns the file's status once the bytes sent were read (`nil`: unknown), which
    /// its removal checks.
    func upload(_ job: OutboxFile, queuedAt: Date) async throws -> FileStatus?

    /// Aborts the multipart uploads whose job ended without a delivery; returns those aborted.
    func abortAbandonedUploads() async -> [AbandonedMultipart]
}

extension Uploading {
    func abortAbandonedUploads() async -> [AbandonedMultipart] { [] }
}

/// Uploads one outbox file as the API's ``UploadContract`` says: its method and URL, the file
/// streamed from disk (raw or as a `multipart/form-data` part), the file's SHA-256 in the
/// idempotency header, the configured headers and the sign-in's `Authorization` (or, for
/// `aws-sigv4`, the request's signature over the file's SHA-256). A delivered
/// status counts only with the receipt the contract asks for. Knows nothing of retries: every
/// failure is thrown, categorised, for the bus. What any answer's rate-limit fields say of the
/// quota (`RateLimit: …;r=12;t=30`, `X-RateLimit-Remaining`) goes to the bus
/// (``ErrorBus/quota(remaining:reset:for:)``), which spreads what remains over the time left and,
/// once nothing remains, holds the uploads until the reset, told as an incident.
final class Uploader: Uploading {
    let http: RoutedHTTPClient
    let auth: AuthService
    let bus: ErrorBus
    /// Where a large file's upload in parts records how far it got.
    let store: JobStore?
    let logger: Logger
    /// The contract, its URL made absolute.
    let contract: UploadContract
    let scope: String
    let realm: String
    let requestTimeout: Duration
    let classify: [ClassificationOverride]

    /// Paces the bodies, all uploads together; `nil`: as fast as the API takes them.
    let bandwidth: BandwidthLimiter?

    init(
        http: RoutedHTTPClient, auth: AuthService, bus: ErrorBus, store: JobStore?, settings: SyncService.Settings,
        bandwidth: BandwidthLimiter? = nil, logger: Logger
    ) {
        self.http = http
        self.bandwidth = bandwidth
        self.auth = auth
        self.bus = bus
        self.store = store
        self.logger = logger
        self.contract = settings.upload
        self.scope = settings.scope
        self.realm = settings.realm
        self.requestTimeout = settings.requestTimeout
        self.classify = settings.classify
    }

    /// Executes a request with a file's body (or a part's). It has no deadline to speak of: a body
    /// takes as long as the link, or `sync.bandwidth`, needs. What bounds it is its progress: a
    /// streamed body's, watched by `progress` (`api.request-timeout` without the connection taking
    /// a chunk, then without the answer's head), and the HTTP client's idle timeouts.
    static func execute(_ request: HTTPClientRequest, http: RoutedHTTPClient, progress: BodyProgress?) async throws -> HTTPClientResponse {
        let unbounded = NIODeadline.now() + .hours(24 * 366)
        guard let progress else { return try await http.execute(request, deadline: unbounded) }
        return try await progress.execute { try await http.execute(request, deadline: unbounded) }
    }

    /// Files are read and sent in chunks of this size, never whole.
    static let chunkLength: Int64 = 64 * 1024

    /// The most of a delivered answer's body read: a receipt is small.
    static let receiptLimit = 64 * 1024

    func upload(_ job: OutboxFile, queuedAt: Date) async throws -> FileStatus? {
        if let bandwidth, let hours = bandwidth.hoursNeededFirstTime(job) {
            logger.notice(
                "\(job.fileName) (\(ByteCountText.format(Int(job.size)))) takes about \(hours) h at sync.bandwidth \(bandwidth.bandwidth): it goes at that pace, as long as its bytes move"
            )
        }
        let signIn = try await auth.signIn()
        let item = UploadItem(sha256: job.sha256, name: job.fileName, size: job.size, queuedAt: queuedAt)
        do {
            return try await send(job, item, signIn: signIn)
        } catch let failure as HTTPFailure where failure.category.kind == .unauthenticated {
            // Refused with credentials the realm's re-authentication (or a reload) has since
            // replaced (the request left before the renewal finished): the new ones have not been
            // refused yet, so try them once rather than starting another re-authentication.
            let current = await auth.currentSignIn
            guard !current.isEmpty, current != signIn else { throw failure }
            return try await send(job, item, signIn: current)
        }
    }

    /// Returns the file's status once the bytes sent were read.
    private func send(_ job: OutboxFile, _ item: UploadItem, signIn: AuthService.SignIn) async throws -> FileStatus? {
        let url = contract.url.render(item)
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: contract.method.rawValue)
        if let header = contract.idempotencyHeader { request.headers.add(name: header, value: job.id) }
        for header in contract.headers {
            request.headers.add(name: header.name, value: header.value.render(item))
        }
        let framing: MultipartFraming?
        switch contract.body {
        case .raw:
            framing = nil
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
        case .multipart(let field):
            let multipart = MultipartFraming(field: field, fileName: job.fileName)
            framing = multipart
            request.headers.add(name: "Content-Type", value: multipart.contentType)
        }
        if let parts = contract.parts, job.size > parts.above, let signer = signIn.signer, let store {
            // In parts: headers for the whole object only, the single request's checksum not.
            let headers = request.headers.map { ($0.name, $0.value) }.filter { name, _ in
                let name = name.lowercased()
                return !name.hasPrefix("x-amz-checksum-") && name != "x-amz-sdk-checksum-algorithm" && name != "content-type"
            }
            let upload = MultipartUpload(
                http: http, signer: signer, store: store, job: job, url: url, parts: parts, headers: headers, existing: contract.existing,
                requestTimeout: requestTimeout, classify: classify, bandwidth: bandwidth, logger: logger
            )
            return try await reading(job) { handle in try await upload.run(handle) }
        }
        // A raw body is the file, whose SHA-256 is known before a byte is read; a multipart one
        // is not hashed.
        signIn.apply(to: &request, payloadHash: framing == nil ? job.sha256 : AWSSignatureV4.unsignedPayload)
        if job.size <= Self.chunkLength {
            // One chunk: read whole (from the kernel's caches, or in one job on the blocking-I/O
            // pool), and sent as one buffer without a body stream.
            let read: FileStatus
            var progress: BodyProgress?
            do {
                var body: ByteBuffer
                (body, read) = try await Self.contents(of: job)
                let sha256 = ContentKey.of(body)
                guard sha256 == job.sha256 else { throw OutboxFileFailure.replaced(job, by: sha256) }
                if let framing { body = framing.wrap(body) }
                if let bandwidth, bandwidth.current.rate != nil {
                    let paced = BodyProgress(timeout: requestTimeout)
                    request.body = .streaming(OneChunk(body), length: Int64(body.readableBytes), bandwidth: bandwidth, progress: paced)
                    progress = paced
                } else {
                    request.body = .bytes(body)
                }
            } catch let error as SystemCallError {
                throw OutboxFileFailure(error, job: job)
            }
            try await send(request, item: item, url: url, job: job, progress: progress)
            return read
        } else {
            let prepared = request
            return try await reading(job) { handle in
                // Hashed as they go; the last chunk is sent only if the whole is the content the
                // job was keyed by.
                let chunks = VerifiedChunks(chunks: handle.readChunks(chunkLength: .bytes(Self.chunkLength)), job: job)
                var request = prepared
                let progress = BodyProgress(timeout: requestTimeout)
                if let framing {
                    request.body = .streaming(framing.wrap(chunks), length: framing.length(around: job.size), bandwidth: bandwidth, progress: progress)
                } else {
                    request.body = .streaming(chunks, length: job.size, bandwidth: bandwidth, progress: progress)
                }
                try await send(request, item: item, url: url, job: job, progress: progress)
            }
        }
    }

    /// Runs `body` with the job's file open, once its size is checked; returns the file's status
    /// once every byte was read and sent: as it is now, unless it changed meanwhile (then its
    /// status before, which it no longer has).
    private func reading(_ job: OutboxFile, _ body: @Sendable (ReadFileHandle) async throws -> Void) async throws -> FileStatus? {
        do {
            return try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(job.path)) { handle in
                let before = try? await handle.withUnsafeDescriptor { descriptor in
                    try? FileStatus.of(descriptor: descriptor.rawValue, path: job.path)
                }
                let size = try await handle.info().size
                guard size == job.size else { throw OutboxFileFailure.changed(job, size: size) }
                try await body(handle)
                let after = try? await handle.withUnsafeDescriptor { descriptor in
                    try? FileStatus.of(descriptor: descriptor.rawValue, path: job.path)
                }
                guard let before, let after else { return nil }
                return after.isSameContent(as: before) ? after : before
            }
        } catch let error as FileSystemError {
            throw OutboxFileFailure(error, job: job)
        }
    }

    func abortAbandonedUploads() async -> [AbandonedMultipart] {
        guard contract.parts != nil, let store, let signer = await auth.currentSignIn.signer, let abandoned = try? store.abandonedMultipartUploads() else {
            return []
        }
        var aborted: [AbandonedMultipart] = []
        for upload in abandoned where await MultipartUpload.abort(upload.uploadID, url: upload.url, http: http, signer: signer) {
            if (try? store.endMultipart(of: upload.jobID)) != nil { aborted.append(upload) }
        }
        return aborted
    }

    /// Sends `request`, whose body, when it streams, is watched by `progress`.
    private func send(_ request: HTTPClientRequest, item: UploadItem, url: String, job: OutboxFile, progress: BodyProgress?) async throws {
        let method = contract.method.rawValue
        let response: HTTPClientResponse
        do {
            response = try await Self.execute(request, http: http, progress: progress)
        } catch let stopped as JobStopped {
            // The file's content changed under the body being sent: the request was cut short.
            throw stopped
        } catch {
            throw HTTPFailure(classifying: error, method: method, url: url)
        }
        // The answer's body, a receipt or a refusal's explanation, is small: read in time.
        let deadline = NIODeadline.now() + TimeAmount(requestTimeout)
        let delivered = contract.delivered.contains(Int(response.status.code))
        // A refusal that says nothing remains is its own incident, with the reset as its hint
        // (HTTPFailure reads it); what remains is told either way.
        if let fields = RateLimitFields(headers: response.headers), let remaining = fields.remaining, let reset = fields.reset,
           delivered || remaining > 0 {
            bus.quota(remaining: remaining, reset: reset, for: Job(id: job.id, service: SyncService.service, scope: scope, realm: realm))
        }
        if response.status == .preconditionFailed, let existing = contract.existing {
            _ = try? await response.collectBody(upTo: Self.receiptLimit, deadline: deadline, method: method, url: url)
            try Self.alreadyStored(existing, fileName: job.fileName, method: method, url: url, logger: logger)
            return
        }
        guard delivered else {
            throw await HTTPFailure.classifying(response, method: method, url: url, deadline: deadline).overridden(by: classify)
        }
        try await checkReceipt(response, item: item, method: method, url: url, deadline: deadline)
    }

    /// Only the API's receipt for this file says that the API has it, where the contract names
    /// one. A 2xx with anything else (a captive portal's or a proxy's page) is no delivery: taking
    /// it for one would remove a file the API never received.
    /// An answer `412` to an upload that asked never to replace what is stored
    /// (``UploadContract/existing``): returns when what is stored is this file (its URL is made of
    /// its content); throws this file's own failure when it may be another.
    static func alreadyStored(_ existing: UploadContract.Existing, fileName: String, method: String, url: String, logger: Logger) throws {
        let target = RequestTarget(url: url)
        switch existing {
        case .delivered:
            logger.info(
                "\(fileName) is stored already: \(target.host) answered \(method) \(target.pathAndQuery) with 412 to If-None-Match: *, and the URL is made of its content"
            )
        case .refused:
            throw HTTPFailure(
                category: .invalid(reason: "an object is stored at its URL already"),
                cause: "alreadyStored",
                method: method,
                url: url,
                text: OperatorText(
                    title: "Stored already",
                    message: "\(target.host) holds an object at \(target.pathAndQuery) already, and If-None-Match: * (api.upload.headers) keeps it from being replaced: \(fileName) was not stored.",
                    next: "The job was set aside as a dead letter: remove or rename the object, then retry it, or discard it. A URL made of the content ({sha256} in api.upload.url) tells a file stored before from another."
                ),
                status: 412
            )
        }
    }

    private func checkReceipt(_ response: HTTPClientResponse, item: UploadItem, method: String, url: String, deadline: NIODeadline) async throws {
        switch contract.receipt {
        case nil:
            // Read (and drop) the body, so that the connection can carry the next upload. The
            // status has said delivered: a body cut short or too long changes nothing.
            _ = try? await response.collectBody(upTo: Self.receiptLimit, deadline: deadline, method: method, url: url)
        case .jsonPointer(let pointer):
            let expected = "a receipt whose \(pointer) is the file's SHA-256"
            let body = try await response.collectBody(upTo: Self.receiptLimit, deadline: deadline, method: method, url: url)
            let value = try? JSONPointer.value(at: pointer, in: Data(body.readableBytesView))
            guard let text = value as? String, text.lowercased() == item.sha256 else {
                throw HTTPFailure.undecodable(
                    method: method, url: url, status: Int(response.status.code),
                    contentType: response.headers.first(name: "Content-Type"), body: body, expected: expected
                )
            }
        case .header(let name, let value):
            _ = try? await response.collectBody(upTo: Self.receiptLimit, deadline: deadline, method: method, url: url)
            let expected = value.render(item)
            let found = response.headers.first(name: name)
            guard found == expected else {
                let target = RequestTarget(url: url)
                throw HTTPFailure(
                    category: .invalid(reason: "no receipt: \(name) is not \(expected)"),
                    cause: "receiptMismatch",
                    method: method,
                    url: url,
                    text: OperatorText(
                        title: "Receipt missing",
                        message: "\(target.host) answered \(method) \(target.pathAndQuery) with \(response.status.code), but its \(name) is \(found.map { "\"\($0)\"" } ?? "missing"), not \"\(expected)\" (api.upload.receipt): something other than the API may have answered.",
                        next: "The job was set aside as a dead letter; retry it once the API answers as expected, or fix api.upload.receipt."
                    ),
                    status: Int(response.status.code)
                )
            }
        }
    }

    /// The whole content of a job's file of at most one chunk, checked against the size it had
    /// when it was queued.
    private static func contents(of job: OutboxFile) async throws -> (ByteBuffer, FileStatus) {
        // One byte more than expected tells a file that grew.
        let read = try await OutboxFileReader.read(job.path, capacity: Int(job.size) + 1)
        guard read.bytes.readableBytes == job.size else { throw OutboxFileFailure.changed(job, size: Int64(read.bytes.readableBytes)) }
        return (read.bytes, read.status)
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

    /// The file's content is no longer the one the job was keyed by (rewritten in place, or
    /// replaced under the same name, after it was queued): the job ends without sending it. Its
    /// new content is a job of its own, which the outbox's watch or rescan queues.
    static func replaced(_ job: OutboxFile, by sha256: String) -> JobStopped {
        JobStopped(evaluation: .cancel, reason: .superseded, failure: replaced(job, "its content (SHA-256 \(sha256.prefix(12)))"))
    }

    /// A file sent in parts whose part `number` is no longer what it was when it was hashed:
    /// the upload is not completed, and the new content is a job of its own.
    static func replaced(_ job: OutboxFile, part number: Int) -> JobStopped {
        JobStopped(evaluation: .cancel, reason: .superseded, failure: replaced(job, "what it holds since part \(number) was hashed"))
    }

    /// The failure a job gives up with when its file was written again with other content
    /// (`now`: what the file holds now).
    static func replaced(_ job: OutboxFile, _ now: String) -> Failure {
        Failure(
            category: .invalid(reason: "the file was replaced"),
            scope: job.service,
            cause: "fileReplaced",
            service: job.service,
            text: OperatorText(
                title: "Replaced before it was sent",
                message: "\(job.fileName) was replaced after it was queued: \(now) is no longer the one queued as job \(job.id.prefix(12)), so nothing was sent under that job's key.",
                next: "The new content is a job of its own; this one is given up."
            )
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
