import Foundation
import Glibc
import TestSupport
import Testing

/// A real nginx (Debian's `nginx-light`), run by the test in the foreground on a loopback port of
/// its own, with its configuration, logs and files in a scratch directory.
///
/// Its error log goes to standard error, its access log to `access.log` in its directory (nginx
/// cannot open a socket as `/dev/stderr`): the access log's lines (`log_format errorbus`: method,
/// URI, status, the conditional headers, the basic-auth user, the `Authorization` header) are what
/// tests wait for.
final class NginxProcess: Sendable {
    let port: Int
    let directory: String
    let configurationFile: String
    private let process: Mutex<ChildProcess?>

    static var executable: String? { ChildProcess.find("nginx") }

    /// Writes the configuration: `servers` is the body of the `http` block, with `{port}` for the
    /// port and `{root}` for the directory.
    init(in scratch: borrowing ScratchDirectory, name: String = "nginx", servers: String) throws {
        directory = scratch.file(name)
        for subdirectory in ["", "/tmp", "/html"] {
            try FileManager.default.createDirectory(atPath: directory + subdirectory, withIntermediateDirectories: true)
        }
        port = try Self.freePort()
        configurationFile = directory + "/nginx.conf"
        let body = servers.replacing("{port}", with: String(port)).replacing("{root}", with: directory)
        let configuration = """
            \(geteuid() == 0 ? "user root root;" : "")
            daemon off;
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log stderr notice;
            events { worker_connections 512; }
            http {
                log_format errorbus '$request_method $uri $status inm="$http_if_none_match" ims="$http_if_modified_since" user="$remote_user" auth="$http_authorization"';
                access_log \(directory)/access.log errorbus;
                client_body_temp_path \(directory)/tmp/body;
                proxy_temp_path \(directory)/tmp/proxy;
                fastcgi_temp_path \(directory)/tmp/fastcgi;
                uwsgi_temp_path \(directory)/tmp/uwsgi;
                scgi_temp_path \(directory)/tmp/scgi;
                client_max_body_size 0;
                keepalive_requests 100000;
            \(body)
            }
            """
        try configuration.write(toFile: configurationFile, atomically: true, encoding: .utf8)
        // There from the start, so that a waiter can watch it before the first request.
        FileManager.default.createFile(atPath: directory + "/access.log", contents: nil)
        process = Mutex(nil)
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts nginx and waits until it says its worker started (it has bound its ports by then).
    func start() async throws {
        guard let executable = Self.executable else { throw ChildProcessError(description: "nginx is not installed (scripts/test installs nginx-light)") }
        let child = try ChildProcess(executable, ["-e", "stderr", "-p", directory, "-c", configurationFile])
        process.withLock { $0 = child }
        guard await child.waitForStandardError(containing: "start worker process ") else {
            let finished = await child.waitForExit()
            throw ChildProcessError(description: "nginx exited with \(finished.status) before it started:\n\(finished.standardError)\n\(finished.standardOutput)")
        }
    }

    /// Stops nginx (a fast shutdown) and waits for it to exit.
    func stop() async {
        guard let child = process.withLock({ $0 }) else { return }
        child.terminate()
        _ = await child.waitForExit()
    }

    /// nginx's worker processes (the children of its master), which hold its connections.
    var workers: [pid_t] {
        guard let master = process.withLock({ $0?.processIdentifier }),
              let children = try? String(contentsOfFile: "/proc/\(master)/task/\(master)/children", encoding: .utf8)
        else { return [] }
        return children.split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Waits until nginx's access log holds a line containing `needle`.
    func waitForAccess(_ needle: String) async throws {
        try await DirectoryWatcher.wait(forContentOf: accessLog) { $0.contains(needle) }
    }

    var accessLog: String { directory + "/access.log" }

    /// The access log so far.
    var log: String { (try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? "" }

    /// A port nobody listens on now, below the kernel's ephemeral range
    /// (`net.ipv4.ip_local_port_range`, 32768 and up here): one the kernel picked for a socket
    /// bound to port 0 is in that range, and was seen taken as the source port of another test's
    /// connection before the server bound it ("Address already in use").
    static func freePort() throws -> Int {
        for _ in 0..<1000 {
            let port = Int.random(in: 10_000..<32_768)
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket >= 0 else { throw ChildProcessError(description: "socket failed: errno \(errno)") }
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if bound { return port }
        }
        throw ChildProcessError(description: "no free port between 10000 and 32767")
    }

    /// An htpasswd line for `user` and `password` (`openssl passwd -apr1`, which nginx reads).
    static func htpasswd(user: String, password: String) async throws -> String {
        let hashed = try await ChildProcess.run("/usr/bin/openssl", ["passwd", "-apr1", password])
        guard hashed.status == 0 else { throw ChildProcessError(description: "openssl passwd failed: \(hashed.standardError)") }
        return "\(user):\(hashed.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))\n"
    }
}

/// Certificates made by `openssl` for a test: a CA, a server certificate for 127.0.0.1, a client
/// certificate from the same CA, and one from another CA the server does not trust.
struct TestCertificates {
    let directory: String

    var caCertificate: String { directory + "/ca.crt" }
    var serverCertificate: String { directory + "/server.crt" }
    var serverKey: String { directory + "/server.key" }
    var clientCertificate: String { directory + "/client.crt" }
    var clientKey: String { directory + "/client.key" }
    var strangerCertificate: String { directory + "/stranger.crt" }
    var strangerKey: String { directory + "/stranger.key" }

    static func make(in scratch: borrowing ScratchDirectory) async throws -> TestCertificates {
        let certificates = TestCertificates(directory: scratch.file("tls"))
        try FileManager.default.createDirectory(atPath: certificates.directory, withIntermediateDirectories: true)
        try await certificates.authority("ca", subject: "/CN=errorbus test CA")
        try await certificates.authority("other-ca", subject: "/CN=another CA")
        try await certificates.issue("server", by: "ca", subject: "/CN=127.0.0.1", extensions: "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        try await certificates.issue("client", by: "ca", subject: "/CN=errorbus client", extensions: "extendedKeyUsage=clientAuth\n")
        try await certificates.issue("stranger", by: "other-ca", subject: "/CN=errorbus client", extensions: "extendedKeyUsage=clientAuth\n")
        return certificates
    }

    private func authority(_ name: String, subject: String) async throws {
        try await openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).crt", "-subj", subject, "-days", "2",
        ])
    }

    private func issue(_ name: String, by authority: String, subject: String, extensions: String) async throws {
        let extensionFile = "\(directory)/\(name).ext"
        try extensions.write(toFile: extensionFile, atomically: true, encoding: .utf8)
        try await openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).csr", "-subj", subject,
        ])
        try await openssl([
            "x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", "\(directory)/\(authority).crt", "-CAkey", "\(directory)/\(authority).key",
            "-CAcreateserial", "-out", "\(directory)/\(name).crt", "-days", "2", "-extfile", extensionFile,
        ])
    }

    private func openssl(_ arguments: [String]) async throws {
        let finished = try await ChildProcess.run("/usr/bin/openssl", arguments)
        guard finished.status == 0 else { throw ChildProcessError(description: "openssl \(arguments.joined(separator: " ")) failed: \(finished.standardError)") }
    }
}

import Synchronization
