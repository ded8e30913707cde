import Foundation
import TestSupport
import Testing

/// `errorbusctl top` in a real terminal: tmux runs it in a pane of its own server, `send-keys`
/// types, `capture-pane` reads the screen.
@Suite("Integration: errorbusctl top", .serialized, .timeLimit(.minutes(2)))
struct TopIntegrationTests {
    typealias Daemon = DaemonIntegrationTests

    /// A tmux server of the test's own (`-L`), one 120×30 session running `command`. The pane
    /// stays once the command ends, so that what it left on the screen can be read.
    final class Tmux: Sendable {
        let server: String
        let session = "top"

        init(_ command: String, columns: Int = 120, rows: Int = 30) async throws {
            server = "errorbus-test-\(UUID().uuidString.prefix(8))"
            try await run("new-session", "-d", "-s", session, "-x", "\(columns)", "-y", "\(rows)", command)
            try await run("set-option", "-t", session, "remain-on-exit", "on")
        }

        @discardableResult
        func run(_ arguments: String...) async throws -> String {
            let finished = try await ChildProcess.run("/usr/bin/tmux", ["-L", server] + arguments)
            guard finished.status == 0 else {
                throw ChildProcessError(description: "tmux \(arguments.joined(separator: " ")): \(finished.standardError)")
            }
            return finished.standardOutput
        }

        /// The pane's screen as text; with `history`, the lines scrolled off it too.
        func screen(history: Bool = false) async throws -> String {
            try await run("capture-pane", "-p", "-t", session, "-S", history ? "-" : "0")
        }

        /// Waits until the screen shows what `condition` looks for. A terminal sends no event
        /// when it is drawn on: the screen is read every 50 ms, for at most 20 s.
        @discardableResult
        func waitForScreen(
            _ what: String,
            sourceLocation: SourceLocation = #_sourceLocation,
            _ condition: (String) -> Bool
        ) async throws -> String {
            let deadline = ContinuousClock.now + .seconds(20)
            var last = ""
            while ContinuousClock.now < deadline {
                last = try await screen()
                if condition(last) { return last }
                try await Task.sleep(for: .milliseconds(50))
            }
            Issue.record("the screen never showed \(what):\n\(last)", sourceLocation: sourceLocation)
            throw ChildProcessError(description: "timed out")
        }

        func kill() async {
            _ = try? await ChildProcess.run("/usr/bin/tmux", ["-L", server, "kill-server"])
        }
    }

    static func topCommand(_ daemon: DaemonProcess) -> String {
        // After top: its exit status, then the terminal's modes as stty sees them.
        "\(Binaries.path("errorbusctl")) top --interval 0.2 --socket \(daemon.controlSocket); echo top-exited=$?; "
            + "echo modes: $(stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(echo|icanon|isig)')"
    }

    /// `q` and Ctrl-C quit (exit 0); SIGTERM ends top as it would any process (143), the
    /// terminal put back first.
    @Test(arguments: [("q", 0), ("C-c", 0), ("SIGTERM", 143)])
    func topRedrawsInPlaceAndQuitsCleanly(key: String, status: Int) async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            let tmux = try await Tmux(Self.topCommand(daemon))
            do {
                var screen = try await tmux.waitForScreen("the services") { $0.contains("SERVICE") && $0.contains("No open incident.") }
                #expect(screen.contains("errorbusd "))
                #expect(screen.contains("OK - no job waiting"))
                #expect(screen.contains("q or Ctrl-C quits"))

                // An outage appears in place: the incident with its next step, the parked jobs.
                try await ControlIntegrationTests.outage(sandbox, daemon, count: 3)
                screen = try await tmux.waitForScreen("the incident") { $0.contains("transient") && $0.contains("ID") }
                #expect(screen.contains("127.0.0.1"))
                // Redrawn, not scrolled: one header on the screen, at the top.
                #expect(screen.components(separatedBy: "SERVICE  STATE").count == 2, "\(screen)")
                #expect(screen.hasPrefix("errorbusd "), "\(screen)")

                if key == "SIGTERM" {
                    let shell = try await tmux.run("display-message", "-p", "-t", tmux.session, "#{pane_pid}")
                    let killed = try await ChildProcess.run("/usr/bin/pkill", ["-TERM", "-P", shell.trimmingCharacters(in: .whitespacesAndNewlines), "errorbusctl"])
                    #expect(killed.status == 0)
                } else {
                    try await tmux.run("send-keys", "-t", tmux.session, key)
                }
                try await tmux.waitForScreen("top's exit") { $0.contains("modes:") }
                screen = try await tmux.screen(history: true)
                #expect(screen.contains("top-exited=\(status)"), "\(screen)")
                // The alternate screen is gone with what top drew on it.
                #expect(!screen.contains("SERVICE"), "\(screen)")
                // The terminal's modes are back: line editing, echo and Ctrl-C as a signal.
                let modes = try #require(screen.split(separator: "\n").first { $0.hasPrefix("modes:") })
                #expect(Set(modes.split(separator: " ").dropFirst()) == ["isig", "icanon", "echo"], "\(modes)")
            } catch {
                await tmux.kill()
                throw error
            }
            await tmux.kill()
        }
    }

    @Test func aSmallTerminalIsToldWhatDoesNotFitAndAnErrorOutlivesTheScreen() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            let tmux = try await Tmux(Self.topCommand(daemon), columns: 60, rows: 12)
            do {
                try await tmux.waitForScreen("the services") { $0.contains("SERVICE") }
                try await ControlIntegrationTests.outage(sandbox, daemon, count: 3)
                let screen = try await tmux.waitForScreen("the marker") { $0.contains("more lines: make the terminal taller") }
                #expect(screen.split(separator: "\n").allSatisfy { $0.count <= 60 }, "\(screen)")
                // errorbusd goes away under top: the reason stays on the screen after it.
                _ = try await daemon.stop()
                try await tmux.waitForScreen("top's exit") { $0.contains("modes:") }
                // Joined: the pane wraps the long line at its 60 columns.
                let after = try await tmux.screen(history: true).split(separator: "\n").joined()
                #expect(after.contains("top-exited=69"), "\(after)")
                #expect(after.contains("errorbusctl: errorbusd closed the connection without answering"), "\(after)")
            } catch {
                await tmux.kill()
                throw error
            }
            await tmux.kill()
            try await daemon.start()
        }
    }

    @Test func withoutATerminalTopPrintsPlainBlocks() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_SYNC_BANDWIDTH": "256KiB/s"]) { _, daemon in
            let finished = try await ChildProcess.run(
                Binaries.path("errorbusctl"),
                ["top", "--count", "2", "--interval", "0.1", "--socket", daemon.controlSocket]
            )
            #expect(finished.status == 0, "\(finished.standardError)")
            #expect(!finished.standardOutput.contains("\u{1B}"))
            #expect(finished.standardOutput.components(separatedBy: "SERVICE").count == 3)
            // The second block has a rate: two expositions were compared.
            #expect(finished.standardOutput.contains("delivered 0/s"))
            // The limit in force, beside the backlog.
            #expect(finished.standardOutput.contains(" · bandwidth 256.0 KiB/s"), "\(finished.standardOutput)")
        }
    }
}
