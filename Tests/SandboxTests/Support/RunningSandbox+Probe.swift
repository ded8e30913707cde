import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

extension RunningSandbox {
    /// One-off requests to a sandbox this test did not start (the executable).
    enum Probe {
        static func expect(port: Int, path: String, status: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: .seconds(10))
            #expect(Int(response.status.code) == status, sourceLocation: sourceLocation)
            _ = try await response.body.collect(upTo: 1 << 20)
        }

        static func expectToken(port: Int, secret: String) async throws {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/oauth/token")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: "grant_type=client_credentials&client_id=errorbus&client_secret=\(secret)"))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            #expect(response.status.code == 200)
            _ = try await response.body.collect(upTo: 1 << 20)
        }
    }
}
