import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The Python scripts of the interoperability tests, which use the reference implementation of
/// Varlink (PyPI: varlink; `scripts/test` installs it).
///
/// Nothing here blocks a thread of Swift's cooperative pool: the server under test needs them.
/// Scripts must not run concurrently (the suite is serialized): a child started meanwhile would
/// inherit the write end of another's pipe and keep it from ever reaching its end.
enum Python {
    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Resources")
            .appendingPathComponent(name)
            .path
    }

    private static func makeProcess(_ script: String, _ arguments: [String]) -> (Process, exit: AsyncStream<Int32>) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Python.script(script)] + arguments
        process.standardInput = FileHandle.nullDevice
        let (exit, exitContinuation) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { process in
            exitContinuation.yield(process.terminationStatus)
            exitContinuation.finish()
        }
        return (process, exit)
    }

    /// Runs a script to its end and returns what it printed.
    static func run(_ script: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let directory = try TemporaryDirectory()
        let stdoutPath = directory.path + "/stdout"
        let stderrPath = directory.path + "/stderr"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let (process, exit) = makeProcess(script, arguments)
        let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        try stdout.close()
        try stderr.close()
        var status: Int32 = -1
        for await value in exit { status = value }
        return (
            status,
            try String(contentsOfFile: stdoutPath, encoding: .utf8),
            try String(contentsOfFile: stderrPath, encoding: .utf8)
        )
    }

    /// Runs a server script while `body` runs, once it has printed "ready"; then kills it.
    static func withServer<Result>(_ script: String, _ arguments: [String], _ body: () async throws -> Result) async throws -> Result {
        let (process, exit) = makeProcess(script, arguments)
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        // The script exits when this pipe closes, which it does if this process dies.
        let lifeline = Pipe()
        process.standardInput = lifeline
        let (stdout, stdoutContinuation) = AsyncStream.makeStream(of: String.self)
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                stdoutContinuation.finish()
            } else {
                stdoutContinuation.yield(String(decoding: data, as: UTF8.self))
            }
        }
        try process.run()

        /// SIGKILL: Foundation starts children with most signals blocked. Then waits for the exit
        /// and for the end of the pipe, so that no readability handler outlives it.
        func kill() async {
            try? lifeline.fileHandleForWriting.close()
            if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
            for await _ in exit {}
            for await _ in stdout {}
        }

        do {
            let ready = try await withDeadline {
                var printed = ""
                for await chunk in stdout {
                    printed += chunk
                    if printed.contains("ready") { return true }
                }
                return false
            }
            guard ready else { throw ServerStoppedEarly() }
            let result = try await body()
            await kill()
            return result
        } catch {
            await kill()
            throw error
        }
    }
}
