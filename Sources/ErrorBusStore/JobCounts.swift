/// How many jobs are in each state.
public struct JobCounts: Sendable, Equatable, CustomStringConvertible {
    private var counts: [JobState: Int]

    public init(_ counts: [JobState: Int] = [:]) {
        self.counts = counts
    }

    /// The number of jobs in `state`.
    public subscript(state: JobState) -> Int {
        get { counts[state] ?? 0 }
        set { counts[state] = newValue }
    }

    public var queued: Int { self[.queued] }
    public var inFlight: Int { self[.inFlight] }
    public var delivered: Int { self[.delivered] }
    public var deadLettered: Int { self[.deadLettered] }
    public var discarded: Int { self[.discarded] }

    /// Every job, whatever its state.
    public var total: Int { counts.values.reduce(0, +) }
    /// Jobs not yet delivered or discarded.
    public var pending: Int { JobState.allCases.filter { !$0.isFinal }.reduce(0) { $0 + self[$1] } }

    public static func == (lhs: JobCounts, rhs: JobCounts) -> Bool {
        JobState.allCases.allSatisfy { lhs[$0] == rhs[$0] }
    }

    public var description: String {
        JobState.allCases.map { "\($0)=\(self[$0])" }.joined(separator: " ")
    }
}
