import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AdminAPI {
    /// The answer to `GET /admin/faults`.
    struct FaultList: Codable, Sendable {
        var nowMs: Double
        var faults: [FaultReport]
    }

    /// `GET /admin/faults`.
    func listFaults() -> Response {
        let now = state.clock.now
        let rules = state.faults.withLock { $0.current(at: now) }
        return Self.json(FaultList(nowMs: now.milliseconds, faults: rules.map { FaultReport(rule: $0, now: now) }))
    }

    /// `POST /admin/faults` with one fault object (answers one report) or an array of them (answers
    /// an array; all are checked before any is applied, and all are scheduled from the same instant).
    func addFaults(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: Self.maxBodyBytes)
        let isArray = body.readableBytesView.first(where: { !Self.isJSONSpace($0) }) == UInt8(ascii: "[")
        let specs: [FaultSpec]
        do {
            let decoder = JSONDecoder()
            specs = isArray
                ? try decoder.decode([FaultSpec].self, from: Data(body.readableBytesView))
                : [try decoder.decode(FaultSpec.self, from: Data(body.readableBytesView))]
        } catch {
            throw ProblemDetails.badFault("The body is not a fault (or an array of faults): \(error)")
        }
        var commands: [FaultCommand] = []
        for spec in specs {
            commands.append(try spec.command())
        }
        let now = state.clock.now
        var reports: [FaultReport] = []
        for (spec, command) in zip(specs, commands) {
            switch command {
            case .expireTokens:
                let expired = state.tokens.withLock { $0.expireAll(at: now) }
                reports.append(FaultReport(spec: spec, expiredTokens: expired))
            case .rule(let route, let mode, let schedule):
                let rule = state.faults.withLock {
                    $0.add(spec: spec, route: route, mode: mode, schedule: schedule, now: now)
                }
                reports.append(FaultReport(rule: rule, now: now))
            }
        }
        let status: HTTPResponse.Status = commands.contains { if case .rule = $0 { true } else { false } } ? .created : .ok
        return isArray ? Self.json(reports, status: status) : Self.json(reports[0], status: status)
    }

    /// The answer to `DELETE /admin/faults`.
    struct Removed: Codable, Sendable {
        var removed: Int
    }

    /// `DELETE /admin/faults` (every rule) or `DELETE /admin/faults?route=R` (the rules set on R).
    func removeFaults(_ request: Request) -> Response {
        guard let route = request.uri.queryParameters["route"].map(String.init) else {
            return Self.json(Removed(removed: state.faults.withLock { $0.removeAll() }))
        }
        let selector: SandboxRoute?
        if route == "all" {
            selector = nil
        } else if let parsed = SandboxRoute(rawValue: route), parsed.isFaultable {
            selector = parsed
        } else {
            return ProblemDetails.badFault("unknown route '\(route)'").response(instance: request.uri.path)
        }
        return Self.json(Removed(removed: state.faults.withLock { $0.removeAll(route: selector) }))
    }

    /// `DELETE /admin/faults/{id}`.
    func removeFault(_ context: BasicRequestContext) throws -> Response {
        let id = try context.parameters.require("id", as: Int.self)
        guard state.faults.withLock({ $0.remove(id: id) }) else {
            throw ProblemDetails.notFound("There is no fault with id \(id).")
        }
        return SandboxAPI.noContent()
    }

    private static func isJSONSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\t")
    }
}
