/// Identifies an incident. Ids grow by one per incident from
/// ``ErrorBusConfiguration/firstIncidentID``.
public struct IncidentID: RawRepresentable, Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public static func < (lhs: IncidentID, rhs: IncidentID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { String(rawValue) }
}
