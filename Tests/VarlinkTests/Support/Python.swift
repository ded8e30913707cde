import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The Python scripts of the interoperability tests, which use the reference implementation of
/// Varlink (PyPI: varlink; `scripts/test` installs it).
///
/// Nothing here blocks a thread of Swift's cooperative pool: the server under test needs them.
enum Python {
    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Resources")
            .appendingPathComponent(name)
            .path
    }

    /// A started script: its output as it arrives, and its exit status once it has exited.
    private struct Running {
        let process: Process
        let stdout: AsyncStream<String>
        let stderr: AsyncStream<String>
        let exit: AsyncStream<Int32>

        init(_ script: String, _ arguments: [String]) throws {
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", Python.script(script)] + arguments
            process.standardInput = FileHandle.nullDevice
            stdout = Self.collect(process, into: \.standardOutput)
            stderr = Self.collect(process, into: \.standardError)
            let (exit, exitContinuation) = AsyncStream.makeStream(of: Int32.self)
            self.exit = exit
            process.terminationHandler = { process in
                exitContinuation.yield(process.terminationStatus)
                exitContinuation.finish()
            }
            try process.run()
        }

        private static func collect(_ process: Process, into output: ReferenceWritableKeyPath<Process, Any?>) -> AsyncStream<String> {
            let pipe = Pipe()
            process[keyPath: output] = pipe
            let (chunks, continuation) = AsyncStream.makeStream(of: String.self)
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                if data.isEmpty {
                    handle.readabilityHandler = nil
                    continuation.finish()
                } else {
                    continuation.yield(String(decoding: data, as: UTF8.self))
                }
            }
            return chunks
        }

        /// Kills the script (SIGKILL: Foundation starts children with most signals blocked) and
        /// waits for it to exit.
        func kill() async {
            if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
            for await _ in exit {}
        }
    }

    private static func text(_ chunks: AsyncStream<String>) async -> String {
        var text = ""
        for await chunk in chunks { text += chunk }
        return text
    }

    /// Runs a script to its end and returns what it printed.
    static func run(_ script: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let running = try Running(script, arguments)
        let stdout = await text(running.stdout)
        let stderr = await text(running.stderr)
        var status: Int32 = -1
        for await value in running.exit { status = value }
        return (status, stdout, stderr)
    }

    /// Runs a server script while `body` runs, once it has printed "ready"; then kills it.
    static func withServer<Result>(_ script: String, _ arguments: [String], _ body: () async throws -> Result) async throws -> Result {
        let running = try Running(script, arguments)
        do {
            let stdout = running.stdout
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
            await running.kill()
            return result
        } catch {
            await running.kill()
            throw error
        }
    }
}
