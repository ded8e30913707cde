import ArgumentParser
import ErrorBusControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Varlink

#if canImport(Glibc)
import Glibc
#endif

// MARK: - health

struct HealthCommand: ControlCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Say whether delivery is healthy, as a monitoring plugin does.",
        discussion: """
            One line, "ERRORBUSD OK - …" (WARNING, CRITICAL, UNKNOWN) with performance data, \
            and the monitoring-plugin exit status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (errorbusd \
            cannot be asked, or did not answer within --timeout, 5s by default). The levels are errorbusd's health.* settings; the verdict is the one \
            of GetStatus and of systemctl status. A configuration errorbusd cannot use is CRITICAL, \
            with its reason: errorbusd does not run, and nothing is delivered; so is a store errorbusd \
            waits for (a full file system, another errorbusd holding it). For Nagios, Icinga, \
            Zabbix or a systemd timer as it is. JSON: the health part of io.errorbus.Control.GetStatus, \
            or {"error", "reason"} when errorbusd cannot be asked (the exit status as above).
            """
    )
    @OptionGroup var options: GlobalOptions

    /// The monitoring-plugin exit statuses.
    static func exitCode(_ status: Control.HealthStatus) -> ExitCode {
        switch status {
        case .ok: ExitCode(0)
        case .warning: ExitCode(1)
        case .critical: ExitCode(2)
        }
    }

    static let unknown = ExitCode(3)

    func run() async throws {
        let status: Control.Status
        do {
            status = try await ControlConnection.withoutReport(options, timeout: timeout) { try await $0.call(Control.getStatus) }
        } catch let failure as ControlConnection.Failure {
            // A configuration errorbusd cannot use, or a store it waits for, is no unknown: the
            // host delivers nothing until an administrator fixes it or the cause passes.
            let critical = failure.kind == .configurationUnusable || failure.kind == .storeUnavailable
            if options.json {
                try Output.json(failure.object)
            } else {
                // A plugin's verdict goes to standard output: that is the line a monitor shows.
                print("ERRORBUSD \(critical ? "CRITICAL" : "UNKNOWN") - \(failure.message)")
            }
            throw critical ? Self.exitCode(.critical) : Self.unknown
        }
        if options.json {
            try Output.json(status.health)
        } else {
            print(Self.line(status.health))
        }
        let code = Self.exitCode(status.health.status)
        if code != .success { throw code }
    }

    /// `ERRORBUSD WARNING - oldest job waiting 20m (warning from 15m) | oldest_job=1200s;900;3600;0 …`
    static func line(_ health: Control.Health) -> String {
        "ERRORBUSD \(health.status.rawValue.uppercased()) - \(health.summary) | " + health.checks.map(perfData).joined(separator: " ")
    }

    /// One check as performance data: `'label'=value[UOM];warn;crit;min`. A check that alerts at
    /// or below its levels (free space) writes them as ranges, `N:`, as the plugin guidelines do.
    static func perfData(_ check: Control.HealthCheck) -> String {
        let below = check.name == "free-space"
        func level(_ value: Double?) -> String {
            guard let value else { return "" }
            return number(value) + (below ? ":" : "")
        }
        let label = String(check.name.map { $0 == "-" ? "_" : $0 })
        return "\(label)=\(number(check.value))\(check.unit);\(level(check.warning));\(level(check.critical));0"
    }

    /// At most three decimals: `3.814`, `50`.
    private static func number(_ value: Double) -> String {
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int64(rounded)) : String(rounded)
    }
}

// MARK: - top

struct Top: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "A live view: services, concurrency, rates, backlog and incidents.",
        discussion: """
            Redraws in place on a terminal until q or Ctrl-C; otherwise (output to a file or a \
            pipe) prints a block of plain lines per refresh. The rates are per second over the \
            last refresh. --timeout bounds each refresh's answers.
            """
    )
    @OptionGroup var options: GlobalOptions
    @Option(help: ArgumentHelp("Seconds between refreshes.", valueName: "seconds")) var interval: Double = 1
    @Option(help: "Stop after this many refreshes (default: until q or Ctrl-C, or for ever).") var count: Int?

    func validate() throws {
        guard interval >= 0.1, interval <= 3600 else { throw ValidationError("--interval must be between 0.1 and 3600 seconds") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if options.json { throw ValidationError("top has no JSON form; use status --json or metrics") }
    }

    func run() async throws {
        let screen = Terminal.isInteractive ? Terminal() : nil
        defer { screen?.restore() }
        do {
            try await watch(screen)
        } catch let failure as ControlConnection.Failure {
            // Said once the screen is back, or it would vanish with the alternate screen.
            screen?.restore()
            throw ControlConnection.fail(failure.message, failure.code)
        }
    }

    private func watch(_ screen: Terminal?) async throws {
        try await ControlConnection.withoutReport(options, timeout: timeout) { client in
            var rates = TopRates()
            var refreshes = 0
            while true {
                let status = try await client.call(Control.getStatus)
                let metrics = try await client.call(Control.getMetrics)
                rates.update(metrics.text, at: ContinuousClock.now)
                let view = TopView(status: status, rates: rates, output: Output(), interval: interval).lines()
                if let screen {
                    screen.draw(view)
                } else {
                    print(view.joined(separator: "\n") + "\n")
                    fflush(nil)
                }
                refreshes += 1
                if let count, refreshes >= count { return }
                if let screen {
                    if screen.waitForQuit(seconds: interval) { return }
                } else {
                    try await Task.sleep(for: .seconds(interval))
                }
            }
        }
    }
}

/// Per-second rates from the counters of two expositions.
struct TopRates {
    /// Counters whose rate is shown, by the name the view gives them.
    static let counters = [
        "delivered": "errorbus_sync_delivered_total",
        "expired": "errorbus_sync_expired_files_total",
        "overflow": "errorbus_sync_overflow_files_total",
    ]
    private var last: (values: [String: Double], at: ContinuousClock.Instant)?
    /// Per second, by view name; empty until two expositions were seen.
    private(set) var perSecond: [String: Double] = [:]

    mutating func update(_ exposition: String, at now: ContinuousClock.Instant) {
        let values = Self.totals(exposition)
        if let last {
            let seconds = max(0.001, (now - last.at).timeInterval)
            perSecond = values.mapValues { _ in 0 }
            for (name, value) in values {
                perSecond[name] = max(0, value - (last.values[name] ?? value)) / seconds
            }
        }
        last = (values, now)
    }

    /// The counters' values, summed over their labels, from the Prometheus text format.
    static func totals(_ exposition: String) -> [String: Double] {
        var totals: [String: Double] = [:]
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            let name = line.prefix { $0 != "{" && $0 != " " }
            guard let view = counters.first(where: { $0.value == name })?.key,
                let valueText = line.split(separator: " ").last, let value = Double(valueText)
            else { continue }
            totals[view, default: 0] += value
        }
        return totals
    }
}

/// What `top` shows, as lines: the same on a terminal (redrawn) and in plain output.
struct TopView {
    let status: Control.Status
    let rates: TopRates
    let output: Output
    let interval: Double

    func lines() -> [String] {
        var lines: [String] = []
        let health = status.health
        let time = Self.localTime(output.now)
        lines.append("errorbusd \(status.version) · \(time) · \(output.paint(health.status.rawValue.uppercased(), output.tone(health.status))) - \(health.summary)")
        let delivered = rates.perSecond["delivered"].map { "\(Int($0.rounded()))/s" } ?? "-"
        var summary = "delivered \(delivered) · backlog \(output.backlog(status.backlog)) · retry budget \(Int(status.retryBudgetTokens)) tokens"
        if let rate = status.bandwidth?.bytesPerSecond {
            summary += " · bandwidth \(Output.bytes(rate))/s"
        }
        lines.append(summary)
        lines.append("")
        lines.append(output.table(
            ["SERVICE", "STATE", "QUEUED", "IN FLIGHT", "PARKED", "DEAD"],
            status.services.map { service in
                [
                    Output.Cell(service.name),
                    Output.Cell(service.state.rawValue, output.tone(service.state)),
                    Output.Cell("\(service.queued)"),
                    Output.Cell("\(service.inFlight)"),
                    Output.Cell("\(service.parked)", service.parked > 0 ? .warning : nil),
                    Output.Cell("\(service.dead)", service.dead > 0 ? .bad : nil),
                ]
            },
            rightAligned: [2, 3, 4, 5]
        ))
        lines.append("")
        if status.scopes.isEmpty {
            lines.append("No scope has run a job yet.")
        } else {
            lines.append(output.table(
                ["SCOPE", "IN FLIGHT", "LIMIT", "WAITING"],
                status.scopes.map { [Output.Cell($0.scope), Output.Cell("\($0.inFlight)"), Output.Cell("\($0.limit)"), Output.Cell("\($0.waiting)")] },
                rightAligned: [1, 2, 3]
            ))
        }
        lines.append("")
        if status.incidents.isEmpty {
            lines.append("No open incident.")
        } else {
            lines.append(contentsOf: output.table(
                ["ID", "SERVICE", "CATEGORY", "SCOPE", "PARKED", "OPENED", "NEXT", "TITLE"],
                status.incidents.map { incident in
                    [
                        Output.Cell("\(incident.id)"),
                        Output.Cell(incident.service),
                        Output.Cell(incident.category.rawValue),
                        Output.Cell(incident.scope),
                        Output.Cell("\(incident.parked)"),
                        Output.Cell(output.relative(incident.openedAt)),
                        Output.Cell(output.nextStep(incident)),
                        Output.Cell(incident.title),
                    ]
                },
                rightAligned: [0, 4]
            ).split(separator: "\n").map(String.init))
        }
        return lines.flatMap { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    }
}

extension TopView {
    /// `HH:MM:SS` in the local time zone.
    static func localTime(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }
}

/// The terminal as it was before `top` changed it, for the signal handler: set once, before the
/// handler is installed, and only read after.
nonisolated(unsafe) private var terminalBeforeTop: termios?

/// SIGTERM or SIGHUP while `top` runs: puts the terminal back (`write` and `tcsetattr` are safe in
/// a signal handler), then ends the process as the signal would have.
private func restoreTerminalAndDie(_ number: CInt) {
    if var saved = terminalBeforeTop {
        let leave: StaticString = "\u{1B}[?25h\u{1B}[?1049l"
        _ = write(STDOUT_FILENO, leave.utf8Start, leave.utf8CodeUnitCount)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved)
    }
    signal(number, SIG_DFL)
    raise(number)
}

/// The terminal while `top` runs: the alternate screen, no cursor, keys read one at a time
/// without echo (Ctrl-C among them, so that it quits as `q` does); all put back on exit, and on
/// SIGTERM or SIGHUP before the signal ends the process.
final class Terminal {
    /// Whether standard input and output are both a terminal: keys can be read and the screen
    /// redrawn.
    static var isInteractive: Bool {
        isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    private let saved: termios
    private var restored = false
    private static let enter = "\u{1B}[?1049h\u{1B}[?25l"
    private static let leave = "\u{1B}[?25h\u{1B}[?1049l"

    init() {
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        self.saved = saved
        terminalBeforeTop = saved
        // kill, kill -INT (Ctrl-C at the keyboard is a byte now), or the terminal closing: put it
        // back, then end as the signal would.
        for number in Self.signals { signal(number, restoreTerminalAndDie) }
        var raw = saved
        // No line editing, no echo, no signals from keys: Ctrl-C arrives as a byte.
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        Self.write(Self.enter)
    }

    /// Puts the terminal back as it was; safe to call twice.
    func restore() {
        guard !restored else { return }
        restored = true
        Self.write(Self.leave)
        var saved = self.saved
        tcsetattr(STDIN_FILENO, TCSANOW, &saved)
        // Only now: a signal before finds the handler, which puts the terminal back too.
        for number in Self.signals { signal(number, SIG_DFL) }
    }

    /// The signals that end `top` with the terminal put back first.
    private static let signals = [SIGTERM, SIGHUP, SIGINT]

    /// Draws `lines` from the top-left, each cut to the width, the rest of the screen cleared.
    func draw(_ lines: [String]) {
        var size = winsize()
        let (rows, columns) = ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0
            ? (Int(size.ws_row), Int(size.ws_col)) : (24, 80)
        let footer = "q or Ctrl-C quits"
        var text = "\u{1B}[H"
        let room = max(1, rows - 2)
        let shown = lines.count > room ? Array(lines.prefix(room - 1)) + ["… \(lines.count - room + 1) more lines: make the terminal taller"] : lines
        for line in shown {
            text += Self.cut(line, to: columns) + "\u{1B}[K\r\n"
        }
        text += "\u{1B}[J\u{1B}[\(rows);1H\u{1B}[2m\(Self.cut(footer, to: columns))\u{1B}[0m\u{1B}[K"
        Self.write(text)
    }

    /// Waits up to `seconds` for a key; true if it was `q`, `Q` or Ctrl-C (or input ended).
    func waitForQuit(seconds: Double) -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return false }
            var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(Double(Int32.max), (left.timeInterval * 1000).rounded(.up)))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return true
            }
            guard ready > 0 else { return false }
            var byte: UInt8 = 0
            let count = read(STDIN_FILENO, &byte, 1)
            if count <= 0 { return true }
            if byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") || byte == 3 { return true }
        }
    }

    /// At most `width` visible characters of `line`; colour codes are kept and not counted.
    static func cut(_ line: String, to width: Int) -> String {
        var visible = 0
        var result = ""
        var escape = false
        for character in line {
            if escape {
                result.append(character)
                if character.isLetter { escape = false }
                continue
            }
            if character == "\u{1B}" {
                escape = true
                result.append(character)
                continue
            }
            guard visible < width else { continue }
            result.append(character)
            visible += 1
        }
        return result + (line.contains("\u{1B}") ? "\u{1B}[0m" : "")
    }

    private static func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }
}

extension Duration {
    fileprivate var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
