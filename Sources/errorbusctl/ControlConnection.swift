import ArgumentParser
import ErrorBusControl
import ErrorBusUnits
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// A connection to errorbusd's control socket, and what becomes of its errors: a message on
/// standard error and an ``ExitStatus``.
enum ControlConnection {
    /// Where errorbusd listens under systemd.
    static let defaultSocket = "/run/errorbusd/io.errorbus.Control"

    /// How long a command that reads waits for errorbusd unless `--timeout` says otherwise: its
    /// answers take milliseconds.
    static let readTimeout = Duration.seconds(5)
    /// How long a command that changes something waits: a retry or discard of every dead letter
    /// changes as many jobs (up to `sync.dead-letters.max-count`) and removes their files.
    static let actionTimeout = Duration.seconds(30)
    /// How long `reauth` waits: a sign-in with the API, bounded by errorbusd's
    /// `api.connect-timeout` and `api.request-timeout` (35 s by default).
    static let signInTimeout = Duration.seconds(60)

    private static let logger = Logger(label: "errorbusctl", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Connects, runs `body`, and turns any failure into a message and an exit code: on standard
    /// error, or with `--json` as a JSON object on standard output (``Failure/object``).
    ///
    /// - Parameter timeout: How long connecting, and each call's answer, may take.
    static func with<Result>(_ options: GlobalOptions, timeout: Duration, _ body: (VarlinkClient) async throws -> Result) async throws -> Result {
        do {
            return try await withoutReport(options, timeout: timeout, body)
        } catch let failure as Failure {
            throw report(failure, json: options.json)
        }
    }

    /// Why errorbusd could not be asked, or what it answered instead, and the exit code for it.
    struct Failure: Error {
        var message: String
        var code: ExitCode
        /// What kind of failure, in one word a script can match (`--json`'s `error`).
        var kind: Kind

        init(message: String, code: ExitCode, kind: Kind? = nil) {
            self.message = message
            self.code = code
            self.kind = kind ?? Kind(code)
        }

        /// The kinds, by the exit status that tells them (`Errorbusctl`'s list).
        enum Kind: String, Encodable {
            /// errorbusd answered with another error (exit 1).
            case failed
            /// No such incident, job or service (4).
            case notFound
            /// An argument errorbusd refused (64).
            case invalidArguments
            /// errorbusd does not run, or stopped without answering (69).
            case notRunning
            /// errorbusd runs but did not answer within `--timeout` (75).
            case timedOut
            /// Not allowed to open the socket or call the method (77).
            case permissionDenied
            /// errorbusd cannot start with its configuration: it said so (78), or its last start
            /// under systemd exited with 78 (then errorbusctl exits 69: it is not running).
            case configurationUnusable
            /// errorbusd runs but cannot open its store: a full file system, or another errorbusd
            /// holding the state directory, which it waits for (1).
            case storeUnavailable

            init(_ code: ExitCode) {
                self =
                    switch code {
                    case ExitStatus.notFound: .notFound
                    case ExitStatus.usage: .invalidArguments
                    case ExitStatus.notRunning: .notRunning
                    case ExitStatus.timedOut: .timedOut
                    case ExitStatus.permissionDenied: .permissionDenied
                    case ExitStatus.configurationUnusable: .configurationUnusable
                    default: .failed
                    }
            }
        }

        /// What `--json` prints instead of a reply: `{"error": "notRunning", "reason": "…"}`.
        struct Object: Encodable {
            var error: Kind
            var reason: String
        }

        var object: Object { Object(error: kind, reason: message) }
    }

    /// As ``with(_:_:)``, but a failure is thrown as a ``Failure`` instead of being written to
    /// standard error: for `health`, whose UNKNOWN line goes to standard output.
    ///
    /// Under systemd, a call on errorbusd's own socket is watched (``UnitWatch``): when the
    /// service's start fails while the call waits, or the socket does not answer at all, the
    /// failure says why errorbusd is not running (its unit's last result, errorbusd's own last
    /// error in the journal) and exits 69 at once, instead of waiting out the call's timeout.
    ///
    /// A call errorbusd does not answer within `timeout` (it runs, but is stopped, hung or
    /// overloaded) ends with ``timedOut(_:after:)``.
    static func withoutReport<Result>(
        _ options: GlobalOptions,
        timeout: Duration,
        _ body: (VarlinkClient) async throws -> Result
    ) async throws -> Result {
        let units = SystemdUnits(socket: options.socket)
        let configuration = VarlinkClient.Configuration(connectTimeout: timeout, callTimeout: timeout)
        do {
            return try await UnitWatch(units: units).whileWaiting {
                try await VarlinkClient.withConnection(to: options.socket, configuration: configuration, logger: logger, body)
            }
        } catch let error as VarlinkClientError where error.code == .timeout {
            throw timedOut(options.socket, after: timeout)
        } catch let error as VarlinkClientError where error.code == .connectFailed {
            switch error.errno {
            case EACCES, EPERM:
                throw Failure(message: "cannot open \(options.socket): permission denied", code: ExitStatus.permissionDenied)
            case EAGAIN:
                // A listener that does not accept: its queue of connections is full.
                throw timedOut(options.socket, after: timeout)
            default:
                throw notRunning(units)
                    ?? Failure(message: "errorbusd is not running (cannot connect to \(options.socket))", code: ExitStatus.notRunning)
            }
        } catch let error as VarlinkError {
            throw Failure(message: message(for: error), code: exitCode(for: error), kind: Control.storeUnavailable.matches(error) ? .storeUnavailable : nil)
        } catch let error as VarlinkClientError where error.code == .connectionClosed {
            throw notRunning(units)
                ?? Failure(
                    message: "errorbusd closed the connection without answering (\(error)); it may have stopped: see journalctl -u errorbusd",
                    code: ExitStatus.notRunning
                )
        } catch let error as VarlinkClientError {
            if let failure = notRunning(units) { throw failure }
            throw Failure(message: "errorbusd did not answer properly: \(error)", code: ExitStatus.failure)
        } catch let failure as UnitWatch.Failed {
            throw Failure(message: failure.line, code: ExitStatus.notRunning, kind: failure.configurationUnusable ? .configurationUnusable : nil)
        }
    }

    /// errorbusd listens on `socket` but did not answer within `timeout`.
    static func timedOut(_ socket: String, after timeout: Duration) -> Failure {
        Failure(
            message: "errorbusd did not answer on \(socket) within \(DurationText.exact(timeout)): it runs but does not answer (stopped, hung or overloaded); see journalctl -u errorbusd",
            code: ExitStatus.timedOut
        )
    }

    /// Why errorbusd is not running, in one line, when systemd can tell and it does not run.
    private static func notRunning(_ units: SystemdUnits?) -> Failure? {
        guard let units, let diagnosis = units.current(), !diagnosis.isRunning, diagnosis.reason != nil else { return nil }
        return Failure(
            message: diagnosis.line(journal: units.lastWords(of: diagnosis)),
            code: ExitStatus.notRunning,
            kind: diagnosis.configurationUnusable ? .configurationUnusable : nil
        )
    }

    static func exitCode(for error: VarlinkError) -> ExitCode {
        if Control.noSuchIncident.matches(error) || Control.noSuchJob.matches(error) || Control.noSuchService.matches(error) {
            return ExitStatus.notFound
        }
        if Control.permissionDenied.matches(error) || error.name == "org.varlink.service.PermissionDenied" {
            return ExitStatus.permissionDenied
        }
        if error.name == "org.varlink.service.InvalidParameter" || Control.invalidTarget.matches(error) || Control.ambiguousJob.matches(error) {
            return ExitStatus.usage
        }
        if Control.configurationUnusable.matches(error) {
            return ExitStatus.configurationUnusable
        }
        return ExitStatus.failure
    }

    static func message(for error: VarlinkError) -> String {
        if let reference = try? Control.noSuchIncident.parameters(of: error) {
            return "no incident \(reference.id)"
        }
        if let reference = try? Control.noSuchJob.parameters(of: error) {
            return "no job \(reference.id) of \(reference.service ?? "sync")"
        }
        if let ambiguity = try? Control.ambiguousJob.parameters(of: error) {
            let shown = ambiguity.candidates.map { "\n  \($0.id)  \($0.name ?? "-")" }.joined()
            let more = ambiguity.matches > ambiguity.candidates.count ? "\n  … and \(ambiguity.matches - ambiguity.candidates.count) more" : ""
            return "job id \(ambiguity.id) is ambiguous: \(ambiguity.matches) jobs of \(ambiguity.service) start with it; give more of its characters:\(shown)\(more)"
        }
        if let problem = try? Control.jobNotActionable.parameters(of: error) {
            return "job \(problem.id) of \(problem.service) is \(problem.state.rawValue): \(problem.reason)"
        }
        if let reference = try? Control.noSuchService.parameters(of: error) {
            return "no service \(reference.service) (sync, loader, auth)"
        }
        if let problem = try? Control.permissionDenied.parameters(of: error) {
            let who = problem.group.map { "root or members of group \($0)" } ?? "root"
            return "permission denied: only \(who) may call \(problem.method)"
        }
        if let problem = try? Control.invalidTarget.parameters(of: error) {
            return "invalid target: \(problem.reason)"
        }
        if let problem = try? Control.reloadFailed.parameters(of: error) {
            return "reload failed, the running configuration is kept: \(problem.text)"
        }
        if let problem = try? Control.configurationUnusable.parameters(of: error) {
            // Some reasons end with what to do already (a missing credential's); the others get it.
            let restart = "systemctl restart errorbusd"
            let advice = problem.text.contains(restart) ? "" : ". Fix it, then: \(restart)"
            return "errorbusd cannot start, its configuration is unusable: \(problem.text)\(advice)"
        }
        if Control.serverErrors.tooManyConnections.matches(error) {
            return "errorbusd has as many control connections as it takes (control.max-connections); try again later"
        }
        if Control.serverErrors.messageTooLarge.matches(error) {
            return "the request or the answer is too large for the control socket"
        }
        if let problem = try? Control.storeUnavailable.parameters(of: error) {
            return "errorbusd cannot read its store: \(problem.reason)"
        }
        return "errorbusd answered \(error)"
    }

    /// Writes `message` to standard error and returns the code to exit with.
    static func fail(_ message: String, _ code: ExitCode) -> ExitCode {
        FileHandle.standardError.write(Data("errorbusctl: \(message)\n".utf8))
        return code
    }

    /// Tells `failure` as ``fail(_:_:)`` does or, with `json`, as one JSON object on standard
    /// output, where a script reading the reply looks; returns the code to exit with.
    static func report(_ failure: Failure, json: Bool) -> ExitCode {
        guard json else { return fail(failure.message, failure.code) }
        do {
            try Output.json(failure.object)
        } catch {
            return fail(failure.message, failure.code)
        }
        return failure.code
    }
}
