/// How the batched ``JobStore/markDelivered(_:)-(String)`` has grouped completions since the
/// store opened.
package struct DeliveryStatistics: Sendable, Equatable {
    /// Transactions committed.
    package var transactions = 0
    /// Completions those transactions recorded.
    package var completions = 0
    /// The most completions one transaction recorded.
    package var largestBatch = 0

    package init(transactions: Int = 0, completions: Int = 0, largestBatch: Int = 0) {
        self.transactions = transactions
        self.completions = completions
        self.largestBatch = largestBatch
    }

    /// Completions per transaction on average.
    package var averageBatch: Double {
        transactions == 0 ? 0 : Double(completions) / Double(transactions)
    }
}
