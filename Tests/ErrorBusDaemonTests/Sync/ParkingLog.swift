import Foundation

/// How many jobs sync's log says it parked under an incident: one per `NAME parked under
/// incident N` (a run's verdict), and `K` per `parked K queued|new jobs under incident N` (the
/// queue an incident holds back, parked at once). A job parked twice (a canary that met the
/// incident again) counts twice, as it was logged.
enum ParkingLog {
    /// - Parameter incident: The incident, or `nil` for any.
    static func parked(in text: String, under incident: Int?) -> Int {
        let number = incident.map { "\($0)" } ?? #"\d+"#
        let one = try! NSRegularExpression(pattern: #"(\S+) parked under incident \#(number)\b"#)
        let many = try! NSRegularExpression(pattern: #"parked (\d+) (?:queued|new) jobs under incident \#(number)\b"#)
        let range = NSRange(text.startIndex..., in: text)
        let each = one.matches(in: text, range: range).filter { match in
            // The store's words for its statements on parked jobs ("taking a job parked under
            // incident N") are not a parking.
            let word = Range(match.range(at: 1), in: text).map { text[$0] }
            return word != "job" && word != "jobs"
        }.count
        let bulk = many.matches(in: text, range: range).compactMap { match in
            Range(match.range(at: 1), in: text).flatMap { Int(text[$0]) }
        }.reduce(0, +)
        return each + bulk
    }
}
