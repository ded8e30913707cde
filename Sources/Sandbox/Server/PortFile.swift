#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The file through which `errorbus-sandbox --port-file PATH` tells scripts and tests its port.
public enum PortFile {
    /// Writes `port` and a newline to `path` atomically (a temporary file renamed over it), so a
    /// reader sees either no file or the whole number.
    public static func write(port: Int, to path: String) throws {
        try Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Removes `path` if it exists.
    public static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
