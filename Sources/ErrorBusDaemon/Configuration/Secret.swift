/// A secret value, such as the OAuth client secret, that never shows in logs or dumps.
///
/// `description`, `debugDescription`, string interpolation, `dump` and the debugger's mirror all
/// show `<redacted>`; only ``value`` gives the secret itself, to the code that has to send it.
package struct Secret: Sendable, Equatable {
    /// The secret itself. Read it only where it is used; never log it.
    package var value: String

    /// Wraps `value`.
    package init(_ value: String) {
        self.value = value
    }

    /// Whether the secret is the empty string.
    package var isEmpty: Bool { value.isEmpty }
}

extension Secret: CustomStringConvertible, CustomDebugStringConvertible {
    /// `<redacted>`.
    package var description: String { "<redacted>" }

    /// `Secret(<redacted>)`.
    package var debugDescription: String { "Secret(<redacted>)" }
}

extension Secret: CustomReflectable {
    /// A mirror without children, so `dump` and debuggers do not show the value either.
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
