import Foundation
import GRDB

/// The store's dates in every record: INTEGER milliseconds since 1970 (see
/// `Date.storeMilliseconds`).
protocol StoreDates: FetchableRecord, EncodableRecord {}

extension StoreDates {
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        StoreDateCoding.encoding
    }

    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        StoreDateCoding.decoding
    }
}

/// The strategies of ``StoreDates``, for a record shared beyond this module, which must declare
/// them itself.
enum StoreDateCoding {
    static let encoding = DatabaseDateEncodingStrategy.custom { $0.storeMilliseconds }
    static let decoding = DatabaseDateDecodingStrategy.custom { value in Int64.fromDatabaseValue(value).map(Date.init(storeMilliseconds:)) }
}
