import AsyncHTTPClient
import Crypto
import ErrorBus
import ErrorBusHTTP
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import _NIOFileSystem

/// One large file sent to object storage in parts (S3's multipart upload): `CreateMultipartUpload`,
/// each part `PUT` with its own SHA-256 (`x-amz-checksum-sha256`, which the store checks), then
/// `CompleteMultipartUpload` with every part's `ETag` and checksum.
///
/// The upload id and each part the store acknowledged go to the store as they happen, so that an
/// outage, a restart or a `kill -9` resumes at the next part: what an interruption sends again
/// is at most the parts that were on the way. The whole file is read once more to hash it (each
/// part the store already has is checked against its checksum, so a file changed since is not
/// completed from stale parts), and each part to send is read again as it is sent; nothing is
/// held in memory but a chunk per part on the way. A store that forgot the upload
/// (`NoSuchUpload`) gets a new one.
struct MultipartUpload: Sendable {
    let http: RoutedHTTPClient
    let signer: AWSSignatureV4
    let store: JobStore
    let job: OutboxFile
    /// The object's URL.
    let url: String
    let parts: UploadContract.Parts
    /// The contract's headers that apply to the whole object (not its single-request checksum).
    let headers: [(name: String, value: String)]
    /// What a `412` to the completion means (`If-None-Match: *` among the headers).
    let existing: UploadContract.Existing?
    let requestTimeout: Duration
    let classify: [ClassificationOverride]
    /// Paces the parts' bodies with every other upload's.
    let bandwidth: BandwidthLimiter?
    let logger: Logger

    /// Sends the file from `handle`, resuming where the store says it got.
    func run(_ handle: ReadFileHandle) async throws {
        let partSize = parts.partSize(for: job.size)
        var progress = try store.multipartProgress(of: job.id)
        if let stale = progress, stale.url != url || stale.partSize != partSize {
            // Started for another key or part size (a changed configuration): not this upload.
            await Self.abort(stale.uploadID, url: stale.url, http: http, signer: signer)
            progress = nil
        }
        // Parts the store has that were not recorded here: it took them as errorbusd stopped.
        var unrecorded: [Int: MultipartProgress.Part] = [:]
        if var resumed = progress {
            // The store's word on the parts it has: one recorded here and gone there is sent
            // again; one it has beyond the record is taken once its bytes are known to be the
            // file's (``send(_:progress:unrecorded:)``).
            if let held = try await storedParts(resumed.uploadID) {
                resumed.parts = resumed.parts.filter { held[$0.key] != nil }
                unrecorded = held.filter { resumed.parts[$0.key] == nil }
                progress = resumed
            } else {
                try forget()
                progress = nil
            }
        }
        let resumed = progress != nil
        do {
            let started: MultipartProgress
            if let progress { started = progress } else { started = try await create(partSize: partSize) }
            try await send(handle, progress: started, unrecorded: unrecorded)
        } catch let failure as HTTPFailure where failure.cause == Self.noSuchUpload && resumed {
            // The store forgot the upload while it was sent (it expired, or was aborted): start
            // again, once.
            try forget()
            try await send(handle, progress: create(partSize: partSize))
        }
        try store.endMultipart(of: job.id)
    }

    static let noSuchUpload = "s3NoSuchUpload"

    /// The store no longer knows the upload: forgotten here too, to start again.
    private func forget() throws {
        logger.notice("the object store no longer knows the upload of \(job.fileName) in parts: starting it again")
        try store.endMultipart(of: job.id)
    }

    /// The parts the store holds of upload `uploadID` (`ListParts`, a page of 1,000 at a time),
    /// each with the checksum it tells (empty when it tells none); `nil` when it no longer knows
    /// the upload.
    private func storedParts(_ uploadID: String) async throws -> [Int: MultipartProgress.Part]? {
        var parts: [Int: MultipartProgress.Part] = [:]
        var marker: Int?
        repeat {
            var request = HTTPClientRequest(url: url + "?uploadId=" + AWSSignatureV4.encoded(uploadID) + (marker.map { "&part-number-marker=\($0)" } ?? ""))
            request.method = .GET
            let body: String
            do {
                body = try await execute(&request, payloadHash: AWSSignatureV4.emptyPayloadHash, what: "ListParts")
            } catch let failure as HTTPFailure where failure.cause == Self.noSuchUpload {
                return nil
            }
            for entry in body.components(separatedBy: "<Part>").dropFirst() {
                guard let number = S3XML.element("PartNumber", in: entry).flatMap({ Int($0) }), let etag = S3XML.element("ETag", in: entry) else { continue }
                parts[number] = .init(etag: etag, checksum: S3XML.element("ChecksumSHA256", in: entry) ?? "")
            }
            let truncated = S3XML.element("IsTruncated", in: body) == "true"
            let next = S3XML.element("NextPartNumberMarker", in: body).flatMap { Int($0) }
            marker = truncated && next != marker ? next : nil
        } while marker != nil
        return parts
    }

    /// Starts a multipart upload and records it.
    private func create(partSize: Int64) async throws -> MultipartProgress {
        var request = HTTPClientRequest(url: url + "?uploads")
        request.method = .POST
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        request.headers.add(name: "x-amz-checksum-algorithm", value: "SHA256")
        let body = try await execute(&request, payloadHash: AWSSignatureV4.emptyPayloadHash, what: "CreateMultipartUpload")
        guard let uploadID = S3XML.element("UploadId", in: body), !uploadID.isEmpty else {
            throw receiptMissing(body, expected: "an UploadId", method: "POST")
        }
        try store.beginMultipart(of: job.id, uploadID: uploadID, url: url, partSize: partSize)
        return MultipartProgress(uploadID: uploadID, url: url, partSize: partSize)
    }

    /// Hashes every part in order, sends those the store does not have (`parallel` at once),
    /// then completes the upload. A part in `unrecorded` (the store has it, this store's record
    /// not) is taken when the store's checksum of it, or its `ETag` (an MD5 of the part, as S3
    /// and most stores make it without KMS), is this part's.
    private func send(_ handle: ReadFileHandle, progress: MultipartProgress, unrecorded: [Int: MultipartProgress.Part] = [:]) async throws {
        let count = Int((job.size + progress.partSize - 1) / progress.partSize)
        if !progress.parts.isEmpty {
            logger.info("resuming the upload of \(job.fileName) in parts: \(progress.parts.count) of \(count) parts already stored")
        }
        var whole = SHA256()
        try await withThrowingTaskGroup(of: Void.self) { group in
            var running = 0
            for number in 1...count {
                let offset = Int64(number - 1) * progress.partSize
                let range = offset..<min(job.size, offset + progress.partSize)
                var hasher = SHA256()
                var md5 = unrecorded[number] == nil ? nil : Insecure.MD5()
                var read: Int64 = 0
                for try await chunk in handle.readChunks(in: range, chunkLength: .bytes(64 * 1024)) {
                    chunk.withUnsafeReadableBytes { bytes in
                        hasher.update(bufferPointer: bytes)
                        whole.update(bufferPointer: bytes)
                        md5?.update(bufferPointer: bytes)
                    }
                    read += Int64(chunk.readableBytes)
                }
                guard read == Int64(range.count) else { throw OutboxFileFailure.changed(job, size: offset + read) }
                let digest = hasher.finalize()
                let checksum = Data(digest).base64EncodedString()
                if let done = progress.parts[number] {
                    // Sent before an interruption: still this file's bytes?
                    guard done.checksum == checksum else {
                        try store.endMultipart(of: job.id)
                        await Self.abort(progress.uploadID, url: url, http: http, signer: signer)
                        throw OutboxFileFailure.replaced(job, part: number)
                    }
                    continue
                }
                if let taken = unrecorded[number], let md5 {
                    let etag = taken.etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased()
                    if taken.checksum == checksum || etag == AWSSignatureV4.hex(md5.finalize()) {
                        try await record(number, .init(etag: taken.etag, checksum: checksum), of: count)
                        continue
                    }
                }
                if running == parts.parallel {
                    try await group.next()
                    running -= 1
                }
                running += 1
                let (uploadID, payloadHash) = (progress.uploadID, ContentKey.hex(of: digest))
                group.addTask {
                    // Recorded as soon as the store has it: a kill then sends again only the
                    // parts on the way.
                    let part = try await self.sendPart(number, range: range, checksum: checksum, payloadHash: payloadHash, uploadID: uploadID, handle: handle)
                    try await self.record(number, part, of: count)
                }
            }
            try await group.waitForAll()
        }
        let sha256 = ContentKey.hex(of: whole.finalize())
        guard sha256 == job.sha256 else {
            try store.endMultipart(of: job.id)
            await Self.abort(progress.uploadID, url: url, http: http, signer: signer)
            throw OutboxFileFailure.replaced(job, by: sha256)
        }
        let acknowledged = try store.multipartProgress(of: job.id)?.parts ?? [:]
        try await complete(progress.uploadID, parts: (1...count).map { number in
            guard let part = acknowledged[number] else { preconditionFailure("part \(number) was neither sent nor recorded") }
            return (number, part)
        })
    }

    private func record(_ number: Int, _ part: MultipartProgress.Part, of count: Int) async throws {
        try await store.recordPart(of: job.id, number: number, part)
        logger.debug("part \(number) of \(count) of \(job.fileName) stored")
    }

    /// One part, read from the file as it is sent, its SHA-256 known beforehand (base64 as the
    /// checksum, hex as the payload's hash).
    private func sendPart(
        _ number: Int, range: Range<Int64>, checksum: String, payloadHash: String, uploadID: String, handle: ReadFileHandle
    ) async throws -> MultipartProgress.Part {
        var request = HTTPClientRequest(url: url + "?partNumber=\(number)&uploadId=" + AWSSignatureV4.encoded(uploadID))
        request.method = .PUT
        request.headers.add(name: "x-amz-sdk-checksum-algorithm", value: "SHA256")
        request.headers.add(name: "x-amz-checksum-sha256", value: checksum)
        // Checked as it goes: a part changed since it was hashed is cut short, never stored.
        let chunks = VerifiedChunks(
            chunks: handle.readChunks(in: range, chunkLength: .bytes(64 * 1024)), job: job, part: (number, Int64(range.count), payloadHash)
        )
        let progress = BodyProgress(timeout: requestTimeout)
        request.body = .streaming(chunks, length: Int64(range.count), bandwidth: bandwidth, progress: progress)
        let etag = try await execute(&request, payloadHash: payloadHash, what: "UploadPart", etag: true, progress: progress)
        return MultipartProgress.Part(etag: etag, checksum: checksum)
    }

    /// Completes the upload with every part; the store's answer must name the object, and its
    /// checksum, when it gives one, must be the parts' (`BASE64-N`, the SHA-256 of their digests).
    private func complete(_ uploadID: String, parts: [(Int, MultipartProgress.Part)]) async throws {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (number, part) in parts {
            xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\(S3XML.escaped(part.etag))</ETag><ChecksumSHA256>\(part.checksum)</ChecksumSHA256></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        var request = HTTPClientRequest(url: url + "?uploadId=" + AWSSignatureV4.encoded(uploadID))
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/xml")
        for header in headers where header.name.lowercased() == "if-none-match" {
            request.headers.add(name: header.name, value: header.value)
        }
        let body = ByteBuffer(string: xml)
        request.body = .bytes(body)
        let answer: String
        do {
            answer = try await execute(&request, payloadHash: ContentKey.hex(of: SHA256.hash(data: Data(xml.utf8))), what: "CompleteMultipartUpload")
        } catch let failure as HTTPFailure where failure.status == 412 {
            guard let existing else { throw failure }
            // Its parts are left over, whatever comes of the file: the store keeps none of them.
            await Self.abort(uploadID, url: url, http: http, signer: signer)
            try Uploader.alreadyStored(existing, fileName: job.fileName, method: "POST", url: url, logger: logger)
            return
        }
        // `CompleteMultipartUploadResult`, as S3 names it (moto: `…Response`).
        guard answer.contains("<CompleteMultipartUploadResult") || answer.contains("<CompleteMultipartUploadResponse") else {
            throw receiptMissing(answer, expected: "a CompleteMultipartUploadResult", method: "POST")
        }
        if let checksum = S3XML.element("ChecksumSHA256", in: answer) {
            var combined = SHA256()
            for (_, part) in parts { combined.update(data: Data(base64Encoded: part.checksum) ?? Data()) }
            let expected = Data(combined.finalize()).base64EncodedString() + "-\(parts.count)"
            guard checksum == expected else { throw receiptMissing(answer, expected: "the checksum \(expected)", method: "POST") }
        }
    }

    /// Signs and sends `request`; returns the answer's body (`etag`: its `ETag` instead). A
    /// status that is not 2xx, and S3's 200 whose body is an `<Error>`, are thrown classified.
    private func execute(
        _ request: inout HTTPClientRequest, payloadHash: String, what: String, etag: Bool = false, progress: BodyProgress? = nil
    ) async throws -> String {
        signer.sign(&request, payloadHash: payloadHash)
        let method = request.method.rawValue
        let target = request.url
        let response: HTTPClientResponse
        do {
            // A part's body takes as long as the link needs; its progress bounds it.
            response = try await Uploader.execute(request, http: http, progress: progress)
        } catch let failure as OutboxFileFailure {
            // The file, read as the part was sent, is shorter than it was: not the request's fault.
            throw failure
        } catch let stopped as JobStopped {
            // A part no longer what was hashed: the request was cut short.
            throw stopped
        } catch {
            throw HTTPFailure(classifying: error, method: method, url: target)
        }
        let deadline = NIODeadline.now() + TimeAmount(requestTimeout)
        guard (200...299).contains(Int(response.status.code)) else {
            throw await HTTPFailure.classifying(response, method: method, url: target, deadline: deadline).overridden(by: classify)
        }
        let body = try await response.collectBody(upTo: 1 << 20, deadline: deadline, method: method, url: target)
        let text = String(buffer: body)
        if text.contains("<Error>") {
            // S3 may answer 200 and fail later in the body (CompleteMultipartUpload): its code
            // says what happened, as it would with its status.
            let status = S3XML.element("Code", in: text) == "SlowDown" ? 503 : 500
            throw HTTPFailure(status: status, headers: ["Content-Type": "application/xml"], body: body, method: method, url: target)
        }
        guard etag else { return text }
        guard let value = response.headers.first(name: "ETag"), !value.isEmpty else {
            throw receiptMissing(text, expected: "an ETag for \(what)", method: method)
        }
        return value
    }

    private func receiptMissing(_ body: String, expected: String, method: String) -> HTTPFailure {
        let target = RequestTarget(url: url)
        return HTTPFailure(
            category: .invalid(reason: "no receipt: expected \(expected)"),
            cause: "receiptMismatch",
            method: method,
            url: url,
            text: OperatorText(
                title: "Receipt missing",
                message: "\(target.host) answered the multipart upload of \(job.fileName) without \(expected): something other than an object store may have answered (\(body.prefix(200)))."
            )
        )
    }

    /// Aborts multipart upload `uploadID` of `url`: the store drops its parts. Best effort: a
    /// store that cannot be reached keeps them until its own lifecycle rules do.
    @discardableResult
    static func abort(_ uploadID: String, url: String, http: RoutedHTTPClient, signer: AWSSignatureV4, timeout: Duration = .seconds(30)) async -> Bool {
        var request = HTTPClientRequest(url: url + "?uploadId=" + AWSSignatureV4.encoded(uploadID))
        request.method = .DELETE
        signer.sign(&request, payloadHash: AWSSignatureV4.emptyPayloadHash)
        do {
            let response = try await http.execute(request, timeout: TimeAmount(timeout))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            // 404: already gone.
            return (200...299).contains(Int(response.status.code)) || response.status == .notFound
        } catch {
            return false
        }
    }
}
