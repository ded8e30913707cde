/// How the batched ``JobStore/markDelivered(_:)-(String)`` has grouped completions since the
/// store opened.
public struct DeliveryStatistics: Sendable, Equatable {
    /// Transactions committed.
    public var transactions = 0
    /// Completions those transactions recorded.
    public var completions = 0
    /// The most completions one transaction recorded.
    public var largestBatch = 0

    public init(transactions: Int = 0, completions: Int = 0, largestBatch: Int = 0) {
        self.transactions = transactions
        self.completions = completions
        self.largestBatch = largestBatch
    }

    /// Completions per transaction on average.
    public var averageBatch: Double {
        transactions == 0 ? 0 : Double(completions) / Double(transactions)
    }
}
