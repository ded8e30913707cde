import AsyncHTTPClient
import ErrorBusHTTP
import Foundation
import NIOHTTP1

extension AWSSignatureV4 {
    /// Signs `request` as it will be sent: its `Host` (set here, so that what is signed is what
    /// goes out), the path and query of its URL, `Content-Type` and every `x-amz-` header it
    /// holds, and `payloadHash`, the SHA-256 of its body (``unsignedPayload`` for a body the
    /// signature does not cover). Adds `x-amz-date`, `x-amz-content-sha256`, a session's
    /// `x-amz-security-token` and `Authorization`. Headers added afterwards are not signed.
    func sign(_ request: inout HTTPClientRequest, payloadHash: String, at date: Date = Date()) {
        let target = RequestTarget(url: request.url)
        let origin = target.origin
        let host = origin.firstRange(of: "://").map { String(origin[$0.upperBound...]) } ?? origin
        request.headers.replaceOrAdd(name: "Host", value: host)
        let (path, query) = Self.split(target.pathAndQuery)
        var headers: [(name: String, value: String)] = [("host", host)]
        for (name, value) in request.headers {
            let lowered = name.lowercased()
            if lowered.hasPrefix("x-amz-") || lowered == "content-type" || lowered == "content-md5" {
                headers.append((lowered, value))
            }
        }
        let signed = sign(Request(method: request.method.rawValue, path: path, query: query, headers: headers, payloadHash: payloadHash), at: date)
        for header in signed.headers {
            request.headers.replaceOrAdd(name: header.name, value: header.value)
        }
    }

    /// The path as sent and the query's parameters, decoded (the signature encodes them its own
    /// way).
    static func split(_ pathAndQuery: String) -> (path: String, query: [(name: String, value: String)]) {
        guard let mark = pathAndQuery.firstIndex(of: "?") else { return (pathAndQuery, []) }
        let query = pathAndQuery[pathAndQuery.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring?) -> String {
                guard let text else { return "" }
                return String(text).removingPercentEncoding ?? String(text)
            }
            return (decoded(parts.first), decoded(parts.count > 1 ? parts[1] : nil))
        }
        return (String(pathAndQuery[..<mark]), query)
    }
}
