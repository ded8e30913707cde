import Foundation
import Glibc
import Synchronization
import TestSupport

/// A real squid (Debian's), run by the test in the foreground on a loopback port of its own, as
/// the HTTP proxy of a corporate network: every request signs in with Basic (`basic_ncsa_auth`
/// over an htpasswd file), `CONNECT` goes to any port, a port in `refusedPorts` is refused
/// (`403`); names in `hosts` resolve, for squid alone, to their address (its `hosts_file`: a
/// bucket's virtual host, say, without touching the machine's `/etc/hosts`). Its configuration
/// and logs are in a scratch directory squid's user owns.
///
/// squid logs a tunnel (`CONNECT host:port user`) when it closes: stop errorbusd, or wait, to see it.
final class SquidProcess: Sendable {
    let port: Int
    let directory: String
    private let process = Mutex<ChildProcess?>(nil)

    static var executable: String? { ChildProcess.find("squid") }

    init(in scratch: borrowing ScratchDirectory, users: [String: String], refusedPorts: [Int] = [], hosts: [String: String] = [:]) async throws {
        directory = scratch.file("squid")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try NginxProcess.freePort()
        var passwords = ""
        for (user, password) in users { passwords += try await NginxProcess.htpasswd(user: user, password: password) }
        try passwords.write(toFile: directory + "/passwd", atomically: true, encoding: .utf8)
        let refused = refusedPorts.isEmpty ? "" : "acl refused port \(refusedPorts.map(String.init).joined(separator: " "))\nhttp_access deny refused\n"
        try hosts.map { "\($0.value) \($0.key)\n" }.joined().write(toFile: directory + "/hosts", atomically: true, encoding: .utf8)
        let configuration = """
            http_port 127.0.0.1:\(port)
            hosts_file \(directory)/hosts
            pid_filename \(directory)/squid.pid
            cache_effective_user proxy
            access_log stdio:\(directory)/access.log squid
            cache_log \(directory)/cache.log
            cache_store_log none
            coredump_dir \(directory)
            cache deny all
            cache_mem 8 MB
            shutdown_lifetime 0 seconds
            auth_param basic program /usr/lib/squid/basic_ncsa_auth \(directory)/passwd
            auth_param basic realm errorbus-test
            acl signedin proxy_auth REQUIRED
            \(refused)http_access allow signedin
            http_access deny all

            """
        try configuration.write(toFile: directory + "/squid.conf", atomically: true, encoding: .utf8)
        for log in ["access.log", "cache.log"] { FileManager.default.createFile(atPath: directory + "/" + log, contents: nil) }
        // squid writes its logs as its own user, not as root: it must get to its directory.
        guard chmod(URL(fileURLWithPath: directory).deletingLastPathComponent().path, 0o711) == 0 else {
            throw ChildProcessError(description: "chmod of the scratch directory: errno \(errno)")
        }
        guard let user = getpwnam("proxy") else { throw ChildProcessError(description: "no user proxy (scripts/test installs squid)") }
        for path in [directory, directory + "/access.log", directory + "/cache.log", directory + "/passwd", directory + "/squid.conf", directory + "/hosts"] {
            guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else { throw ChildProcessError(description: "chown \(path): errno \(errno)") }
        }
    }

    /// `http://127.0.0.1:PORT`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// Starts squid and waits until it accepts connections (a restart included: it logs that
    /// line once per start).
    func start() async throws {
        guard let executable = Self.executable else { throw ChildProcessError(description: "squid is not installed (scripts/test installs it)") }
        let accepting = "Accepting HTTP Socket connections", failed = "Terminated abnormally"
        let before = (cacheLog.components(separatedBy: accepting).count, cacheLog.components(separatedBy: failed).count)
        let child = try ChildProcess(executable, ["-N", "-f", directory + "/squid.conf"])
        process.withLock { $0 = child }
        // One of the two lines, once per start (squid logs a failure to start there too).
        let log = try await DirectoryWatcher.wait(forContentOf: directory + "/cache.log") {
            $0.components(separatedBy: accepting).count > before.0 || $0.components(separatedBy: failed).count > before.1
        }
        guard log.components(separatedBy: accepting).count > before.0 else {
            let finished = await child.waitForExit()
            throw ChildProcessError(description: "squid exited with \(finished.status) before it started:\n\(finished.standardError)\n\(log)")
        }
    }

    /// Stops squid (`shutdown_lifetime 0`: at once) and waits for it to exit.
    func stop() async {
        guard let child = process.withLock({ $0 }) else { return }
        child.terminate()
        _ = await child.waitForExit()
    }

    /// The access log so far: one line per request or tunnel, when it ended.
    var accessLog: String { (try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? "" }

    var cacheLog: String { (try? String(contentsOfFile: directory + "/cache.log", encoding: .utf8)) ?? "" }

    /// Waits until the access log holds a line containing every one of `needles`.
    func waitForAccess(_ needles: String...) async throws {
        try await DirectoryWatcher.wait(forContentOf: directory + "/access.log") { log in
            log.split(separator: "\n").contains { line in needles.allSatisfy { line.contains($0) } }
        }
    }
}
