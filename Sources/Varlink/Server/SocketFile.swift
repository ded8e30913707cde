import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file of a Unix socket the server binds.
enum SocketFile {
    /// Removes a socket left behind by a server that is gone, so the path can be bound again.
    ///
    /// Removes nothing that is not a socket, and nothing another server is listening on: it
    /// connects to the socket first, and only `ECONNREFUSED` proves it stale.
    static func removeStale(at path: String, eventLoopGroup: any EventLoopGroup) async throws {
        var status = stat()
        do {
            try systemCall("lstat", path: path) { lstat(path, &status) }
        } catch let error as VarlinkServerError where error.errno == ENOENT {
            return
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else { throw VarlinkServerError.notASocket(path) }
        let listening: Bool
        do {
            let channel = try await ClientBootstrap(group: eventLoopGroup)
                .connectTimeout(.seconds(1))
                .connect(unixDomainSocketPath: path)
                .get()
            try? await channel.close()
            listening = true
        } catch let error as IOError where error.errnoCode == ECONNREFUSED {
            listening = false
        }
        guard !listening else { throw VarlinkServerError.addressInUse(path) }
        do {
            try systemCall("unlink", path: path) { unlink(path) }
        } catch let error as VarlinkServerError where error.errno == ENOENT {
            return
        }
    }

    /// Sets the permissions of the socket file: who may connect.
    static func setMode(_ mode: UInt32, at path: String) throws {
        try systemCall("chmod", path: path) { chmod(path, mode_t(mode)) }
    }

    /// Removes the socket file when the server stops; errors are of no consequence then.
    static func remove(at path: String) {
        _ = try? systemCall("unlink", path: path) { unlink(path) }
    }
}
