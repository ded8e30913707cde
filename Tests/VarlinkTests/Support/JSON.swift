import Foundation
@testable import Varlink

/// A JSON text as a value, so that two texts compare equal whatever the order of their keys.
func json(_ text: String?) throws -> JSONValue? {
    guard let text else { return nil }
    return try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
}
