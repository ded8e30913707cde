/// The file names errorbusd accepts for resources and credentials: names that stay inside the
/// directory they are joined to.
enum SafeFileName {
    /// What the error messages say such a name looks like.
    static let expectation = "letters, digits, '.', '_' and '-', not starting with '.'"

    /// Letters, digits, `.`, `_` and `-`; not empty, not starting with `.` (so never `.`, `..`
    /// or a hidden file), at most 255 bytes.
    static func isSafe(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && name.utf8.count <= 255
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
    }
}
