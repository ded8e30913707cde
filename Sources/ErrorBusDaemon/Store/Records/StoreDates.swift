import Foundation
import GRDB

/// The store's dates in every record: INTEGER milliseconds since 1970 (see
/// `Date.storeMilliseconds`).
protocol StoreDates: FetchableRecord, EncodableRecord {}

extension StoreDates {
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        .custom { $0.storeMilliseconds }
    }

    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        .custom { value in Int64.fromDatabaseValue(value).map(Date.init(storeMilliseconds:)) }
    }
}
