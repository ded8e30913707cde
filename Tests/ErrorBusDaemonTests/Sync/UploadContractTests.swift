import Foundation
import Glibc
import Testing

@testable import ErrorBusDaemon

/// The pieces of the upload contract on their own: templates, the JSON pointer of a receipt, the
/// multipart framing and the delivered statuses.
@Suite struct UploadContractTests {
    let item = UploadItem(sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", name: "a b/ü.txt", size: 4)

    @Test func templatesRenderEveryPlaceholder() throws {
        let template = try UploadTemplate.parse("/f/{name}?sha={sha256}&b64={sha256-base64}&n={size}")
        #expect(
            template.render(item)
                == "/f/a%20b%2F%C3%BC.txt?sha=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08&b64=n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=&n=4"
        )
        #expect(template.description == "/f/{name}?sha={sha256}&b64={sha256-base64}&n={size}")
        #expect(template.isPath)
        #expect(!(try UploadTemplate.parse("https://x.test/{name}")).isPath)
    }

    /// An object's key by day and host: the day its job was queued, UTC, whenever it is sent.
    @Test func templatesRenderTheDayTheJobWasQueuedAndTheHostsName() throws {
        let template = try UploadTemplate.parse("/logs/{hostname}/{year}/{month}/{day}/{hour}/{name}")
        var queued = item
        queued.queuedAt = Date(timeIntervalSince1970: 1_767_225_599)  // 2025-12-31T23:59:59Z
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        let host = UploadTemplate.percentEncoded(String(cString: name))
        #expect(template.render(queued) == "/logs/\(host)/2025/12/31/23/a%20b%2F%C3%BC.txt")
        queued.queuedAt = Date(timeIntervalSince1970: 1_772_323_200)  // 2026-03-01T00:00:00Z
        #expect(template.render(queued) == "/logs/\(host)/2026/03/01/00/a%20b%2F%C3%BC.txt")
        #expect(template.description == "/logs/{hostname}/{year}/{month}/{day}/{hour}/{name}")
    }

    @Test func templatesRefuseWhatTheyDoNotKnow() {
        #expect(throws: UploadTemplate.ParseError.self) { try UploadTemplate.parse("/f/{id}") }
        #expect(throws: UploadTemplate.ParseError.self) { try UploadTemplate.parse("/f/{name") }
        // Credentials only where a reader for them is given (headers).
        #expect(throws: UploadTemplate.ParseError.self) { try UploadTemplate.parse("{credential:key}") }
        let header = try? UploadTemplate.parse("Bearer {credential:key}") { _ in Secret("s3") }
        #expect(header?.render(item) == "Bearer s3")
        #expect(header?.description == "Bearer {credential:key}")
    }

    @Test func aJSONPointerFindsNestedValuesAndEscapedNames() throws {
        let json = Data(#"{"sha256":"x","item":{"digests":["a","b"],"a/b":{"~k":"y"}}}"#.utf8)
        #expect(try JSONPointer.value(at: "/sha256", in: json) as? String == "x")
        #expect(try JSONPointer.value(at: "/item/digests/1", in: json) as? String == "b")
        #expect(try JSONPointer.value(at: "/item/a~1b/~0k", in: json) as? String == "y")
        #expect(try JSONPointer.value(at: "/item/digests/2", in: json) == nil)
        #expect(try JSONPointer.value(at: "/missing", in: json) == nil)
        #expect(throws: (any Error).self) { try JSONPointer.value(at: "/sha256", in: Data("<html>".utf8)) }
    }

    @Test func aMultipartBodyFramesTheFileWhetherWholeOrInChunks() async throws {
        let framing = MultipartFraming(field: "file", fileName: "quote\"d\r\n\\.txt")
        #expect(framing.contentType == "multipart/form-data; boundary=\(framing.boundary)")
        let prefix = String(buffer: framing.prefix)
        #expect(prefix.hasPrefix("--\(framing.boundary)\r\n"))
        #expect(prefix.contains("Content-Disposition: form-data; name=\"file\"; filename=\"quote%22d%0D%0A%5C.txt\"\r\n"))
        #expect(prefix.hasSuffix("\r\n\r\n"))
        #expect(String(buffer: framing.suffix) == "\r\n--\(framing.boundary)--\r\n")

        let whole = framing.wrap(ByteBuffer(string: "abc"))
        var streamed = ByteBuffer()
        let chunks = AsyncStream<ByteBuffer> { continuation in
            continuation.yield(ByteBuffer(string: "a"))
            continuation.yield(ByteBuffer(string: "bc"))
            continuation.finish()
        }
        for try await chunk in framing.wrap(chunks) { streamed.writeImmutableBuffer(chunk) }
        #expect(streamed == whole)
        #expect(Int64(whole.readableBytes) == framing.length(around: 3))
    }

    @Test func anAPIThatTellsFilesByNameKeysThemByName() throws {
        #expect(!UploadContract().tellsFilesByName)
        #expect(UploadContract(url: try UploadTemplate.parse("/dav/{name}")).tellsFilesByName)
        #expect(UploadContract(body: .multipart(field: "file")).tellsFilesByName)
        let content = String(repeating: "a", count: 64)
        #expect(ContentKey.of(content, name: "a.txt") != ContentKey.of(content, name: "b.txt"))
        #expect(ContentKey.of(content, name: "a.txt") == ContentKey.of(content, name: "a.txt"))
    }

    @Test func deliveredStatusesAreSuccessesOnly() {
        #expect(DeliveredStatuses.successful.contains(204) && !DeliveredStatuses.successful.contains(304))
        guard case .success(let listed) = DeliveredStatuses.parse(["201", "204"]) else { Issue.record(); return }
        #expect(listed.contains(201) && !listed.contains(200))
        #expect(listed.description == "201, 204")
        if case .success = DeliveredStatuses.parse(["302"]) { Issue.record("a redirect is never a delivery") }
        if case .success = DeliveredStatuses.parse([]) { Issue.record("no status at all") }
    }
}

import NIOCore
