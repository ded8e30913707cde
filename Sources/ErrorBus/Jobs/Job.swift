/// A unit of work a service runs through the bus, e.g. one upload.
///
/// The bus needs to know whose work it is (``service``), where it goes (``scope``, usually the
/// API's host) and which credentials it uses (``realm``), so that one outage, one rate limit or
/// one expired token holds back exactly the work it concerns.
public struct Job: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// Identifies the job within its service, e.g. the outbox item's id.
    public var id: String
    /// The service that owns the job, e.g. `"sync"`.
    public var service: String
    /// Where the job's requests go: the endpoint's host for network work.
    public var scope: String
    /// The authentication realm whose credentials the job uses, if any.
    public var realm: String?

    public init(id: String, service: String, scope: String, realm: String? = nil) {
        self.id = id
        self.service = service
        self.scope = scope
        self.realm = realm
    }

    public var description: String { "\(service)/\(id)" }

    /// The scope a failure of this kind applies to when its error names none.
    func defaultScope(for kind: ErrorCategory.Kind) -> String {
        switch kind.scopeKind {
        case .host: scope
        case .realm: realm ?? scope
        case .service: service
        }
    }
}
