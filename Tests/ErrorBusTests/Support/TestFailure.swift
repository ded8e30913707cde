import ErrorBus

/// An error of a chosen category, as a service would throw it.
struct TestFailure: CategorizedError {
    var category: ErrorCategory
    var cause: String
    var scope: String?

    init(_ category: ErrorCategory, cause: String = "test", scope: String? = nil) {
        self.category = category
        self.cause = cause
        self.scope = scope
    }

    var operatorText: OperatorText {
        OperatorText(title: "Test failure", message: "A \(category) failure (\(cause)).")
    }

    static let unreachable = TestFailure(.unreachable, cause: "connectionRefused")
    static let unauthenticated = TestFailure(.unauthenticated, cause: "http401")
    static let transient = TestFailure(.transient, cause: "http503")
}

extension Job {
    static func sync(_ number: Int, scope: String = "api.test", realm: String? = "api") -> Job {
        Job(id: "item-\(number)", service: "sync", scope: scope, realm: realm)
    }
}
