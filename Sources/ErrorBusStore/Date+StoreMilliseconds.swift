import Foundation

extension Date {
    /// The store keeps dates as whole milliseconds since 1970 (INTEGER columns, readable with
    /// `datetime(createdAt / 1000, 'unixepoch')`). Dates it hands out are built from that number,
    /// so a job returned by a write compares equal to the same job read back.
    init(storeMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// This date as stored: milliseconds since 1970, rounded.
    var storeMilliseconds: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded())
    }

    /// This date at the store's precision.
    var atStorePrecision: Date {
        Date(storeMilliseconds: storeMilliseconds)
    }
}
