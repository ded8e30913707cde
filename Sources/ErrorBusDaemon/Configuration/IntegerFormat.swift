/// How whole numbers are written in errorbusd's configuration: decimal digits with an optional
/// sign, and `_` allowed between digits as YAML 1.1 does (`100_000`).
enum IntegerFormat {
    /// Parses `text`, or returns `nil` if it is not a whole number that fits in an `Int`.
    static func parse(_ text: some StringProtocol) -> Int? {
        let trimmed = text.configurationTrimmed
        guard let body = DigitSeparators.removed(from: trimmed) else { return nil }
        return Int(body)
    }
}

/// `_` between two digits, as YAML 1.1 allows in numbers.
enum DigitSeparators {
    /// `text` without its digit separators, or `nil` if an `_` stands anywhere but between two
    /// digits.
    static func removed(from text: Substring) -> String? {
        let characters = Array(text)
        var result = ""
        for (index, character) in characters.enumerated() {
            guard character == "_" else {
                result.append(character)
                continue
            }
            guard index > 0, index + 1 < characters.count, characters[index - 1].isWholeNumber,
                characters[index + 1].isWholeNumber
            else { return nil }
        }
        return result
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var configurationTrimmed: Substring {
        let view = Substring(self)
        let start = view.firstIndex { $0 != " " && $0 != "\t" } ?? view.endIndex
        let end = view.lastIndex { $0 != " " && $0 != "\t" }.map(view.index(after:)) ?? start
        return view[start..<Swift.max(start, end)]
    }
}
