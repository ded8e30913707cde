#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Parses an RFC 9110 §5.6.7 `HTTP-date` by hand: no `DateFormatter`, no locale, no time zone
/// database, and every field checked. `now` places an RFC 850 two-digit year in its century.
///
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
/// - RFC 850 (obsolete): `Sunday, 06-Nov-94 08:49:37 GMT` — a two-digit year more than 50 years
///   in the future is taken to be in the past century (RFC 9110 §5.6.7)
/// - asctime (obsolete): `Sun Nov  6 08:49:37 1994`
///
/// The day name is checked for form, not against the date (senders get it right; a wrong one
/// changes nothing about when the date is).
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays: Set<String> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays: Set<String> = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    static func parse(_ text: String, now: Date) -> Date? {
        let fields = text.split(whereSeparator: { $0 == " " }).map(String.init)
        if fields.count == 6, fields[0].hasSuffix(","), shortDays.contains(fields[0].dropLast().lowercased()), fields[5] == "GMT" {
            // IMF-fixdate: day-name "," SP date1 SP time-of-day SP GMT, date1 = DD SP Mon SP YYYY
            guard fields[1].count == 2, let day = Int(fields[1]), let month = month(fields[2]),
                fields[3].count == 4, let year = Int(fields[3])
            else { return nil }
            return date(year: year, month: month, day: day, time: fields[4])
        }
        if fields.count == 4, fields[0].hasSuffix(","), longDays.contains(fields[0].dropLast().lowercased()), fields[3] == "GMT" {
            // RFC 850: day-name-l "," SP date2 SP time-of-day SP GMT, date2 = DD-Mon-YY
            let parts = fields[1].split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 2, let day = Int(parts[0]), let month = month(String(parts[1])),
                parts[2].count == 2, let shortYear = Int(parts[2])
            else { return nil }
            let currentYear = year(of: now)
            var year = currentYear - currentYear % 100 + shortYear
            if year > currentYear + 50 { year -= 100 }
            return date(year: year, month: month, day: day, time: fields[2])
        }
        if fields.count == 5, shortDays.contains(fields[0].lowercased()) {
            // asctime: day-name SP Mon SP ( 2DIGIT / SP DIGIT ) SP time-of-day SP YYYY
            guard let month = month(fields[1]), (1...2).contains(fields[2].count), let day = Int(fields[2]),
                fields[4].count == 4, let year = Int(fields[4])
            else { return nil }
            return date(year: year, month: month, day: day, time: fields[3])
        }
        return nil
    }

    private static func month(_ name: String) -> Int? {
        guard name.count == 3, let index = months.firstIndex(of: name.lowercased()) else { return nil }
        return index + 1
    }

    /// The instant of a checked calendar date and `HH:MM:SS` in UTC (a leap second `60` is
    /// accepted and lands on the next minute).
    private static func date(year: Int, month: Int, day: Int, time: String) -> Date? {
        let parts = time.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), let second = Int(parts[2]),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The UTC calendar year `date` falls in (H. Hinnant's `civil_from_days`).
    private static func year(of date: Date) -> Int {
        let days = Int((date.timeIntervalSince1970 / 86_400).rounded(.down))
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        return yearOfEra + era * 400 + (monthIndex >= 10 ? 1 : 0)
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
