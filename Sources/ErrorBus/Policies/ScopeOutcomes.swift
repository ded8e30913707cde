#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What one service's latest runs at one scope say, and the two questions the bus asks of it when
/// a job fails: does the scope still serve, and how often does it fail the jobs that run there?
///
/// A scope refuses work in three shapes, and each needs its own answer:
///
/// - **It serves nothing** (an outage): every run fails. One incident holds the scope and tests it
///   with one canary at a time.
/// - **It serves some** (a rate, a quota, a full queue, a cold start, one bad backend behind a
///   balancer): runs fail and succeed side by side. That is the scope's failure too, one incident
///   per cause, but nothing is held: work goes on at the pace the scope serves, and what failed is
///   tried again.
/// - **It serves the others but not this job** (a file the API refuses): the job's failures are
///   its own, and it is set aside on its own.
///
/// The second and third look alike run by run; they differ in how *unlikely* a job's failures are
/// given how often the scope fails its neighbours the same way at the same time. This value keeps
/// what that takes, in constant room: the outcomes of the scope's last ``window`` runs; the
/// outcomes, by cause, of its last ``window`` *fresh* runs (a job's run that follows no failure of
/// its own, so that one job failing again and again does not make its neighbours look worse than
/// they fare); the failures in a row since the last success, and the jobs among them; and a count
/// of the successes, which tells whether another job succeeded between two failures of one job.
///
/// Runs of a job already set aside on its own are not recorded: they say nothing of the scope.
package struct ScopeOutcomes: Sendable, Equatable {
    /// How many of the latest outcomes each window keeps.
    package static var window: Int { 128 }

    /// The latest outcomes of every run recorded, as bits (a failure is 1), newest in bit 0.
    private var recent: UInt128 = 0
    private var recentCount = 0
    /// The latest fresh runs' outcomes, by slot (a fresh run's number modulo ``window``): 0 for a
    /// success, else the failure's cause, as its index in `causes` plus one.
    private var fresh = [UInt8](repeating: 0, count: ScopeOutcomes.window)
    /// Fresh runs recorded so far: a fresh run's number tells whether it is still among the
    /// latest, and its slot.
    private var freshRuns: UInt64 = 0
    /// The causes fresh runs failed with (at most 255; later ones share the last).
    private var causes: [String] = []
    /// The numbers of the fresh runs that failed, of jobs whose failures since nearly single them
    /// out (``suspect(freshRun:)``): left out of ``failureShare(of:)``, so that a few jobs the
    /// scope refuses for ever do not make its other jobs look as if they failed as often.
    private var suspects: Set<UInt64> = []
    /// Failures in a row since the last success.
    package private(set) var streak = 0
    /// The jobs among them (at most ``window`` told apart): one job failing again and again while
    /// nothing else runs is weighed as one.
    private var streakJobs: Set<Int> = []
    /// Successes recorded so far: a job whose two failures saw this number change failed while
    /// another job succeeded.
    package private(set) var successes: UInt64 = 0

    package init() {}

    /// Records a run that succeeded.
    package mutating func succeeded(fresh isFresh: Bool) {
        append(failed: false)
        if isFresh { recordFresh(0) }
        streak = 0
        streakJobs.removeAll(keepingCapacity: true)
        successes &+= 1
    }

    /// Records a run of the job `job` (any key that tells jobs apart) that failed with `cause` in a
    /// way that may be the scope's (`unreachable`, `transient`, `rateLimited`). Returns the fresh
    /// run's number, for a fresh run.
    @discardableResult
    package mutating func failed(fresh isFresh: Bool, cause: String, job: Int) -> UInt64? {
        append(failed: true)
        streak += 1
        if streakJobs.count < Self.window { streakJobs.insert(job) }
        guard isFresh else { return nil }
        recordFresh(index(of: cause))
        return freshRuns
    }

    /// The job whose fresh run `freshRun` failed is nearly singled out by its failures since:
    /// that failure is left out of ``failureShare(of:)`` while it is among the latest.
    package mutating func suspect(freshRun: UInt64) {
        suspects = suspects.filter { isRecent($0) }
        guard isRecent(freshRun), suspects.count < Self.window else { return }
        suspects.insert(freshRun)
    }

    /// The job suspected for its fresh run `freshRun` succeeded after all: that failure counts
    /// again.
    package mutating func clear(freshRun: UInt64) {
        suspects.remove(freshRun)
    }

    /// Whether the scope still serves: some run succeeded among the latest, and the failures in a
    /// row since the last success are not too many to be chance, at the share of runs that failed
    /// before them.
    ///
    /// The failures in a row are counted by job: fewer than three jobs failing in a row are
    /// always chance; more are not once the probability of so many in a row, at that share (an
    /// upper bound of it: a share measured over a few dozen runs varies, and a scope that fails
    /// half its runs must not be taken for one that stopped serving because a few dozen of them
    /// went better), falls below ``holdLevel``. One or two jobs failing again and again with
    /// nothing served in between (a quiet host in an outage) weigh half as much: twice as many
    /// of their failures. A scope with no success among its latest runs does not serve: a daemon
    /// that starts in an outage, or whose API went down long ago, holds at its first failure.
    package var serves: Bool {
        let count = min(recentCount, Self.window)
        guard streak < count, count - streak > 0, successesInWindow > 0 else { return false }
        guard streak >= 3 else { return true }
        // The share of the runs just before the streak, by Laplace's rule: never 0, never 1.
        let runs = min(Self.holdWindow, count - streak)
        let before = recent >> streak
        let failures = (before & ((1 << runs) - 1)).nonzeroBitCount
        let estimate = Double(failures + 1) / Double(runs + 2)
        let spread = (estimate * (1 - estimate) / Double(runs + 2)).squareRoot()
        let upper = min(estimate + 1.5 * spread, max(estimate, 0.5))
        let level = log10(Self.holdLevel)
        let jobs = streakJobs.count
        if jobs >= 3 { return Double(jobs) * log10(upper) > level }
        return Double(streak) / 2 * log10(estimate) > level
    }

    /// How many runs before a streak of failures tell the share it is weighed against: recent
    /// enough to follow a scope whose share changed (a partial failure that began, a pacing
    /// server), enough to be a share.
    package static var holdWindow: Int { 32 }

    /// Below this probability, failures in a row are no longer chance: the scope has stopped
    /// serving.
    package static var holdLevel: Double { 1e-3 }

    /// The share of fresh runs that failed with `cause`: how often the scope fails a job that has
    /// not failed before that way. With no fresh run recorded, 1: nothing is known, so no failure
    /// of a job can stand out. An upper estimate, `(failures + 1) / (runs + 1)`, so that a handful
    /// of successes never makes a job's failure look like a rare event.
    package func failureShare(of cause: String) -> Double {
        let count = Int(min(freshRuns, UInt64(Self.window)))
        let code = causes.firstIndex(of: cause).map { UInt8(min($0, 254) + 1) }
        var failures = 0
        var suspected = 0
        for number in suspects where isRecent(number) {
            suspected += 1
            if let code, fresh[slot(number)] == code { failures -= 1 }
        }
        if let code {
            for index in 0..<count where fresh[index] == code { failures += 1 }
        }
        return Double(max(0, failures) + 1) / Double(count - suspected + 1)
    }

    /// The evidence one failure of a job with `cause` adds that its failures are its own, in
    /// decimal orders of magnitude: `log10(1 / failureShare(of: cause))` when another job of the
    /// scope succeeded since `successesBefore` (the count at the job's previous failure, or when
    /// its failing run started), nothing otherwise.
    ///
    /// Evidence only counts failures that happened while the scope served others: a job that fails
    /// again while nothing else succeeds (in an outage, or with no traffic beside it) tells nothing
    /// of itself.
    package func evidence(ofFailureWith cause: String, after successesBefore: UInt64) -> Double {
        guard successes &- successesBefore > 0 else { return 0 }
        return -log10(failureShare(of: cause))
    }

    /// The latest runs recorded (at most ``window``), and how many of them failed.
    package var latest: (runs: Int, failures: Int) {
        let count = min(recentCount, Self.window)
        return (count, count - successesInWindow)
    }

    // MARK: - Windows

    private var successesInWindow: Int {
        let count = min(recentCount, Self.window)
        let mask: UInt128 = count >= Self.window ? ~0 : (1 << count) - 1
        return count - (recent & mask).nonzeroBitCount
    }

    private mutating func append(failed: Bool) {
        recent = (recent << 1) | (failed ? 1 : 0)
        recentCount = min(recentCount + 1, Self.window)
    }

    private mutating func recordFresh(_ code: UInt8) {
        freshRuns &+= 1
        fresh[slot(freshRuns)] = code
    }

    private func slot(_ number: UInt64) -> Int {
        Int(number % UInt64(Self.window))
    }

    private func isRecent(_ number: UInt64) -> Bool {
        freshRuns &- number < UInt64(min(freshRuns, UInt64(Self.window)))
    }

    private mutating func index(of cause: String) -> UInt8 {
        if let index = causes.firstIndex(of: cause) { return UInt8(min(index, 254) + 1) }
        if causes.count < 255 { causes.append(cause) }
        return UInt8(causes.count)
    }
}
