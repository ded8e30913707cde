import AsyncHTTPClient
import Crypto
@testable import ErrorBusDaemon
import Foundation
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1
import Testing

/// The signer against object storage nobody here wrote: moto's S3 server, with its
/// authentication on, checks each request's signature against the access key it made. First
/// that it does (a wrong secret is refused), or nothing here would test the signing.
@Suite("Integration: AWS Signature Version 4 against moto's S3", .timeLimit(.minutes(2)))
struct S3SigningIntegrationTests {
    @Test func anObjectSignedWithTheSecretIsStoredAndAWrongSecretOrKeyIsRefused() async throws {
        let moto = try await MotoS3Process()
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let info = moto.info
            let signer = AWSSignatureV4(credentials: .init(accessKeyID: info.accessKeyId, secretAccessKey: info.secretAccessKey), region: info.region)
            // A key with characters the path must encode.
            let path = AWSSignatureV4.encodedPath(info.bucket + "/reports/2026 11/report #1+ü.bin")
            let body = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

            var wrong = signer
            wrong.credentials.secretAccessKey = "wrong" + info.secretAccessKey
            let refused = try await Self.send("PUT", path, body, signer: wrong, info: info, http: http)
            #expect(refused.status == 403 && refused.text.contains("<Code>SignatureDoesNotMatch</Code>"), "\(refused)")
            var unknown = signer
            unknown.credentials.accessKeyID = "AKIAUNKNOWNKEY000000"
            let stranger = try await Self.send("PUT", path, body, signer: unknown, info: info, http: http)
            #expect(stranger.status == 403 && stranger.text.contains("<Code>InvalidAccessKeyId</Code>"), "\(stranger)")

            let stored = try await Self.send("PUT", path, body, signer: signer, info: info, http: http)
            #expect(stored.status == 200, "\(stored)")
            let read = try await Self.send("GET", path, Data(), signer: signer, info: info, http: http)
            #expect(read.status == 200 && read.body == body)
        } catch {
            try? await http.shutdown()
            await moto.stop()
            throw error
        }
        try await http.shutdown()
        await moto.stop()
    }

    static func send(_ method: String, _ path: String, _ body: Data, signer: AWSSignatureV4, info: MotoS3Process.Info, http: HTTPClient) async throws -> (status: UInt, text: String, body: Data) {
        let host = try #require(URL(string: info.endpoint).map { "\($0.host ?? ""):\($0.port ?? 80)" })
        let signed = signer.sign(
            .init(method: method, path: path, headers: [("host", host)], payloadHash: AWSSignatureV4.hex(SHA256.hash(data: body))),
            at: Date()
        )
        var request = HTTPClientRequest(url: info.endpoint + path)
        request.method = .init(rawValue: method)
        for header in signed.headers { request.headers.add(name: header.name, value: header.value) }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await http.execute(request, timeout: .seconds(30))
        let received = Data(buffer: try await response.body.collect(upTo: 1 << 20))
        return (response.status.code, String(decoding: received, as: UTF8.self), received)
    }
}
