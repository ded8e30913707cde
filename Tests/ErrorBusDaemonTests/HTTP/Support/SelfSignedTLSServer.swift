import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing
import TestSupport

/// A TLS server on an ephemeral loopback port with a self-signed certificate generated for the
/// test by `openssl`. It completes TLS handshakes (or fails them) and nothing else: the tests
/// only need to see how a client's handshake ends.
struct SelfSignedTLSServer: Sendable {
    let port: Int
    /// The PEM file of the server's certificate, for a client that should trust it.
    let certificatePath: String

    /// Generates a certificate for `subjectAltName` (e.g. `IP:127.0.0.1`), serves it while
    /// `body` runs, then stops and removes the files.
    static func with<R: Sendable>(subjectAltName: String, _ body: (SelfSignedTLSServer) async throws -> R) async throws -> R {
        let openssl = try #require(ChildProcess.find("openssl"), "openssl is needed to make a test certificate")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("errorbus-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificatePath = directory.appendingPathComponent("cert.pem").path
        let keyPath = directory.appendingPathComponent("key.pem").path
        let generated = try await ChildProcess.run(
            openssl,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", keyPath, "-out", certificatePath, "-days", "2",
                "-subj", "/CN=errorbus-test", "-addext", "subjectAltName=\(subjectAltName)",
            ]
        )
        try #require(generated.status == 0, "openssl: \(generated.standardError)")

        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificatePath).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyPath, format: .pem))
        )
        let context = try NIOSSLContext(configuration: configuration)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let port = try #require(channel.localAddress?.port)
        let result: Result<R, any Error>
        do {
            result = .success(try await body(SelfSignedTLSServer(port: port, certificatePath: certificatePath)))
        } catch {
            result = .failure(error)
        }
        try await channel.close()
        return try result.get()
    }
}
