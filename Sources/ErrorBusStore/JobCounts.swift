/// How many jobs are in each state.
package struct JobCounts: Sendable, Equatable, CustomStringConvertible {
    private var counts: [JobState: Int]

    package init(_ counts: [JobState: Int] = [:]) {
        self.counts = counts
    }

    /// The number of jobs in `state`.
    package subscript(state: JobState) -> Int {
        get { counts[state] ?? 0 }
        set { counts[state] = newValue }
    }

    package var queued: Int { self[.queued] }
    package var inFlight: Int { self[.inFlight] }
    package var parked: Int { self[.parked] }
    package var delivered: Int { self[.delivered] }
    package var deadLettered: Int { self[.deadLettered] }
    package var discarded: Int { self[.discarded] }

    /// Every job, whatever its state.
    package var total: Int { counts.values.reduce(0, +) }
    /// Jobs not yet delivered or discarded (parked ones included).
    package var pending: Int { JobState.allCases.filter { !$0.isFinal }.reduce(0) { $0 + self[$1] } }

    package static func == (lhs: JobCounts, rhs: JobCounts) -> Bool {
        JobState.allCases.allSatisfy { lhs[$0] == rhs[$0] }
    }

    package var description: String {
        JobState.allCases.map { "\($0)=\(self[$0])" }.joined(separator: " ")
    }
}
