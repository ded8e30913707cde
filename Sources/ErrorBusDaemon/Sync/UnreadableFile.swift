import Foundation

/// An outbox file the sync service cannot read, and why.
struct UnreadableFile: Sendable, Equatable {
    /// Its name in the outbox.
    let name: String
    /// The error opening or reading it, e.g. `open(…): Permission denied`.
    let reason: String
    /// Since when errorbusd has known it.
    let since: Date
    /// Whether its writer announced it complete (renamed it in, or closed it after writing):
    /// once readable, it is taken without waiting for it to settle.
    var announced: Bool
}
