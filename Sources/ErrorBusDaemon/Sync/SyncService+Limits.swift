import ErrorBus
import ErrorBusStore
import ErrorBusSupport
import ErrorBusUnits
import Foundation
import Logging
import Metrics

extension SyncService {
    // MARK: - The backlog's limits

    /// Makes room in an overfull backlog (`sync.backlog.overflow: drop-oldest`): sets aside as
    /// dead letters the claimed jobs not started yet, then, in the store, the jobs that failed
    /// on their own (a file the API keeps refusing), then the oldest waiting (parked or queued),
    /// until the backlog is within its limits. Uploads under way are left to finish. Bad work
    /// goes before good work that merely waits behind it.
    func makeRoom() async {
        let limits = settings.backlog
        let backlog: JobStore.Backlog
        do {
            backlog = try store.backlog(service: Self.service)
        } catch {
            await storeFailures.report(error, doing: "read the backlog")
            return
        }
        var room = BacklogRoom(backlog, limits)
        guard room.isOver else {
            overflow.endIfUnder(backlog, limits)
            return
        }
        let text = OperatorText(
            title: "Dropped to make room",
            message: "the backlog was over \(BacklogOverflow.describe(limits)), and newer files go first (sync.backlog.overflow: drop-oldest)."
        )
        // As ``ended(_:_:)`` words a dead letter's reason.
        let reason = "\(text.title): \(text.message)"
        var dropped = 0
        // Then those claimed for the dispatcher and not started yet, oldest first.
        while room.isOver, let job = state.dropPending() {
            do {
                try store.markDeadLettered(job.id, reason: reason, incident: nil, attempts: 0)
                room.free(job.size)
                dropped += 1
                setAside([job.fileName], reason)
            } catch {
                await storeFailures.report(error, doing: "set aside \(job.fileName) for room")
                break
            }
        }
        if room.isOver {
            do {
                let queued = try store.dropOldestQueued(service: Self.service, maxBytes: limits.maxBytes, maxJobs: limits.maxFiles, reason: reason)
                dropped += queued.count
                setAside(queued.map(\.fileName), reason)
            } catch {
                await storeFailures.report(error, doing: "drop the oldest queued files")
            }
        }
        overflow.record(dropped, limits)
        // More dead letters: the retention may have some to give up.
        if dropped > 0 { retention.wentOverCount() }
        // Dead letters as any other, whose cause is no incident but the backlog's limit.
        Counter(label: "errorbus_jobs_dead_lettered_total", dimensions: [("service", Self.service), ("category", "overflow")]).increment(by: dropped)
    }

    /// What every dead letter sync records is told: the journal's line per file (info: the
    /// incident's entries tell the story).
    func setAside(_ fileNames: [String], _ reason: String) {
        for fileName in fileNames { logger.info("\(fileName) set aside as a dead letter: \(reason)") }
    }

    // MARK: - Retention

    /// Forgets the delivered jobs beyond `sync.delivered-retention`. Discarded ones stay: their
    /// files are still in the outbox, and the row is what keeps them from being sent.
    func forgetDelivered() async {
        guard let retention = settings.deliveredRetention else { return }
        do {
            let forgotten = try store.pruneFinished(before: wallClock.now().addingTimeInterval(-retention.timeInterval), deliveredOnly: true)
            if forgotten > 0 {
                logger.info("\(forgotten) delivered jobs forgotten: delivered more than sync.delivered-retention (\(DurationText.exact(retention))) ago")
            }
        } catch {
            await storeFailures.report(error, doing: "forget finished jobs")
        }
    }

    /// Gives up the dead letters beyond `sync.dead-letters.*`, oldest first, and removes their
    /// files; counts them and says so once per pass.
    func pruneDeadLetters() async {
        let retention = settings.deadLetters
        let prune: JobStore.DeadLetterPrune
        do {
            prune = try store.pruneDeadLetters(keeping: retention.maxCount, before: retention.maxAge.map { wallClock.now().addingTimeInterval(-$0.timeInterval) })
        } catch {
            await storeFailures.report(error, doing: "prune dead letters")
            return
        }
        for job in prune.all {
            removal.removePruned(job.path, fileName: job.fileName)
        }
        if !prune.overCount.isEmpty {
            Counter(label: "errorbus_sync_dead_letters_pruned_total", dimensions: [("limit", "max_count")]).increment(by: prune.overCount.count)
        }
        if !prune.tooOld.isEmpty {
            Counter(label: "errorbus_sync_dead_letters_pruned_total", dimensions: [("limit", "max_age")]).increment(by: prune.tooOld.count)
        }
        let givenUp = RetentionSchedule.GivenUp(overCount: prune.overCount.count, tooOld: prune.tooOld.count)
        guard let told = self.retention.gaveUp(givenUp, at: clock.now()) else { return }
        var parts: [String] = []
        if told.overCount > 0 {
            parts.append("\(told.overCount) beyond sync.dead-letters.max-count (\(retention.maxCount))")
        }
        if told.tooOld > 0 {
            parts.append("\(told.tooOld) older than sync.dead-letters.max-age (\(retention.maxAge.map(DurationText.exact) ?? "none"))")
        }
        logger.notice("Dead letters given up, oldest first, their files removed: \(parts.joined(separator: "; "))")
    }
}
