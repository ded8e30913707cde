import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat

/// `sync-baseline BASE_URL SECRET DIRECTORY CONCURRENCY`: uploads every file of DIRECTORY to the
/// sandbox the way errorbusd's sync service does (one bearer token, `PUT /v1/items/{sha256}` with
/// the content's SHA-256 as `Idempotency-Key`, CONCURRENCY requests at once) and prints
/// `items=N seconds=S items_per_second=R`. Nothing is durable, nothing is retried: the ceiling
/// errorbusd is measured against.
///
/// `sync-baseline --webdav BASE_URL USER:PASSWORD DIRECTORY CONCURRENCY`: the same against a
/// WebDAV server, as errorbusd's WebDAV contract does it: `PUT /dav/{name}` with basic auth,
/// `201` or `204`.
@main
enum SyncBaseline {
    static func main() async throws {
        var arguments = CommandLine.arguments
        let webDAV = arguments.count > 1 && arguments[1] == "--webdav"
        if webDAV { arguments.remove(at: 1) }
        guard arguments.count == 5, let concurrency = Int(arguments[4]), concurrency > 0 else {
            FileHandle.standardError.write(Data("usage: sync-baseline [--webdav] BASE_URL SECRET|USER:PASSWORD DIRECTORY CONCURRENCY\n".utf8))
            exit(64)
        }
        let (baseURL, secret, directory) = (arguments[1], arguments[2], arguments[3])
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { !$0.hasPrefix(".") }
            .map { directory + "/" + $0 }

        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let upload: @Sendable (String) async throws -> Void
        if webDAV {
            let authorization = "Basic " + Data(secret.utf8).base64EncodedString()
            upload = { try await put($0, http: http, baseURL: baseURL, authorization: authorization) }
        } else {
            let token = try await accessToken(http: http, baseURL: baseURL, secret: secret)
            upload = { try await Self.upload($0, http: http, baseURL: baseURL, token: token) }
        }
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = files.makeIterator()
            for _ in 0..<concurrency {
                guard let file = next.next() else { break }
                group.addTask { try await upload(file) }
            }
            while try await group.next() != nil {
                if let file = next.next() {
                    group.addTask { try await upload(file) }
                }
            }
        }
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("items=\(files.count) seconds=\(seconds) items_per_second=\(Double(files.count) / seconds)")
        try await http.shutdown()
    }

    static func upload(_ path: String, http: HTTPClient, baseURL: String, token: String) async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let key = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        var request = HTTPClientRequest(url: "\(baseURL)/v1/items/\(key)")
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Idempotency-Key", value: key)
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(data: data))
        let response = try await http.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 64 * 1024)
        guard response.status == .created || response.status == .ok else {
            throw BaselineError(description: "PUT \(key): \(response.status)")
        }
    }

    /// `PUT /dav/{name}`: the file's name percent-encoded, the body raw.
    static func put(_ path: String, http: HTTPClient, baseURL: String, authorization: String) async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let name = URL(fileURLWithPath: path).lastPathComponent
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? name
        var request = HTTPClientRequest(url: "\(baseURL)/dav/\(encoded)")
        request.method = .PUT
        request.headers.add(name: "Authorization", value: authorization)
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(data: data))
        let response = try await http.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 64 * 1024)
        guard response.status == .created || response.status == .noContent else {
            throw BaselineError(description: "PUT \(name): \(response.status)")
        }
    }

    static func accessToken(http: HTTPClient, baseURL: String, secret: String) async throws -> String {
        var request = HTTPClientRequest(url: "\(baseURL)/oauth/token")
        request.method = .POST
        let credentials = Data("errorbus:\(secret)".utf8).base64EncodedString()
        request.headers.add(name: "Authorization", value: "Basic \(credentials)")
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=client_credentials"))
        let response = try await http.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 64 * 1024)
        struct Token: Decodable { let access_token: String }
        return try JSONDecoder().decode(Token.self, from: Data(buffer: body)).access_token
    }
}

struct BaselineError: Error, CustomStringConvertible {
    let description: String
}
