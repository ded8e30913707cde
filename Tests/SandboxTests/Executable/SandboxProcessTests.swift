import Foundation
import NIOCore
import Testing

/// The built `errorbus-sandbox` binary, run as a real process.
@Suite(.timeLimit(.minutes(1)))
struct SandboxProcessTests {
    /// The executable next to the test bundle (`swift build --build-tests` builds both).
    private static var executable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent()
            .appendingPathComponent("errorbus-sandbox")
    }

    /// Suspends until `path` exists with a port in it, or `process` has exited.
    private static func waitForPort(in path: String, of process: Process) async throws -> Int? {
        while process.isRunning {
            if let text = try? String(contentsOfFile: path, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                return port
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    @Test func servesOnItsPortFileAndStopsCleanlyOnSIGTERM() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let portFile = directory.appendingPathComponent("port").path
        let secretFile = directory.appendingPathComponent("secret")
        try Data("s3cret\n".utf8).write(to: secretFile)

        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--port-file", portFile, "--client-secret-file", secretFile.path, "--log-level", "warning"]
        let (exits, exited) = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in
            exited.yield()
            exited.finish()
        }
        try process.run()

        let port = try #require(try await Self.waitForPort(in: portFile, of: process), "the sandbox exited before writing its port file")
        try await RunningSandbox.Probe.expect(port: port, path: "/healthz", status: 204)
        try await RunningSandbox.Probe.expectToken(port: port, secret: "s3cret")

        process.terminate()  // SIGTERM
        for await _ in exits {}
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: portFile), "the port file outlived the process")
    }

    @Test func rejectsABadOption() async throws {
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--log-level", "loud"]
        process.standardError = FileHandle.nullDevice
        let (exits, exited) = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in
            exited.yield()
            exited.finish()
        }
        try process.run()
        for await _ in exits {}
        #expect(process.terminationStatus == 64)  // EX_USAGE
    }
}
