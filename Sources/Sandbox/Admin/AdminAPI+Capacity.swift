import HTTPTypes
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AdminAPI {
    /// The answer to `GET` and `PUT /admin/capacity`.
    struct CapacityReport: Codable, Sendable {
        var nowMs: Double
        /// The capacity set; null: unlimited.
        var spec: CapacitySpec?
        /// The limits in force now (lower than the spec's during a ramp-up).
        var concurrencyNow: Int?
        var perSecondNow: Double?
        var counts: CapacityLimiter.Counts
    }

    /// `GET /admin/capacity`.
    func capacityReport() -> Response {
        let now = state.clock.now
        let (capacity, counts) = state.capacity.current
        return Self.json(CapacityReport(
            nowMs: now.milliseconds,
            spec: capacity?.spec,
            concurrencyNow: capacity?.concurrency(at: now),
            perSecondNow: capacity?.perSecond(at: now),
            counts: counts
        ))
    }

    /// `PUT /admin/capacity` with a ``CapacitySpec``: the API takes that much from now on.
    func setCapacity(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: Self.maxBodyBytes)
        let spec: CapacitySpec
        do {
            spec = try JSONDecoder().decode(CapacitySpec.self, from: Data(body.readableBytesView))
        } catch {
            throw ProblemDetails.badRequest("The body is not a capacity: \(error)")
        }
        let now = state.clock.now
        do {
            state.capacity.set(try spec.capacity(setAt: now), at: now)
        } catch {
            throw ProblemDetails.badRequest("The capacity cannot be applied: \(error.reason)")
        }
        return capacityReport()
    }
}
