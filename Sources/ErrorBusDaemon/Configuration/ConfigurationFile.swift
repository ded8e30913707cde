import ErrorBusSupport
import Glibc

/// Reads the small files configuration comes from (the YAML file, the client secret), with the
/// operating system's reason when that fails.
///
/// Foundation's file APIs report a missing file and a permission problem alike on Linux;
/// an administrator needs to know which. Every call goes through ``SystemCall``; its error's
/// `errno` text is what the reader is told.
enum ConfigurationFile {
    /// Why a file could not be read: `strerror`'s text, such as "No such file or directory".
    struct ReadError: Error, Sendable, CustomStringConvertible {
        var description: String
    }

    /// The bytes of the regular file at `path`, at most `limit` of them.
    static func read(_ path: String, limit: Int) throws(ReadError) -> [UInt8] {
        let descriptor = try check { () throws(SystemCallError) in try SystemCall.open(path, flags: O_RDONLY | O_NOCTTY) }
        defer { try? SystemCall.close(descriptor) }

        let status = try check { () throws(SystemCallError) in try FileStatus.of(descriptor: descriptor, path: path) }
        if status.otherType == "a directory" { throw ReadError(description: "is a directory, not a file") }
        guard status.isRegularFile else { throw ReadError(description: "is not a regular file") }
        guard status.size <= limit else {
            throw ReadError(description: "is \(status.size) bytes, more than the \(limit) allowed")
        }

        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = try check { () throws(SystemCallError) in
                try SystemCall.check("read", path: path) {
                    chunk.withUnsafeMutableBytes { buffer in Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
                }
            }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            guard bytes.count <= limit else {
                throw ReadError(description: "is more than the \(limit) bytes allowed")
            }
        }
    }

    /// The `*.yaml` files in `directory`, by name in byte order; `nil` if there is no such
    /// directory.
    static func yamlFiles(in directory: String) throws(ReadError) -> [String]? {
        guard let stream = opendir(directory) else {
            if errno == ENOENT { return nil }
            throw ReadError(description: String(cString: strerror(errno)))
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".yaml"), !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { directory + "/" + $0 }
    }

    /// Runs a system call; its failure is told by `errno`'s text alone (the caller names the file).
    private static func check<T>(_ body: () throws(SystemCallError) -> T) throws(ReadError) -> T {
        do {
            return try body()
        } catch {
            throw ReadError(description: error.reason)
        }
    }
}
