public import Varlink

extension Control {
    // MARK: - Status

    /// The reply of `GetStatus`.
    public struct Status: Codable, Sendable, Equatable {
        /// errorbusd's version.
        public var version: String
        /// When errorbusd started.
        public var startedAt: String
        /// The line errorbusd gives systemd as `STATUS=`.
        public var statusLine: String
        /// Whether the bus runs (policies only progress while it does).
        public var running: Bool
        /// sync, loader and auth, in this order.
        public var services: [ServiceStatus]
        /// Open incidents, oldest first.
        public var incidents: [Incident]
        /// Retries waiting for the retry budget.
        public var waitingForBudget: Int
        /// Tokens left in the retry budget.
        public var retryBudgetTokens: Double
        /// Outbox files errorbusd cannot read, oldest first: not uploaded until they can be.
        public var unreadableFiles: [UnreadableFile]
        /// Whether delivery is healthy, by the thresholds of `health.*`: the verdict
        /// `errorbusctl health` and `STATUS=` give too.
        public var health: Health
        /// The files waiting for delivery, and the backlog's limits.
        public var backlog: Backlog
        /// Each scope's adaptive concurrency: how many of its jobs may run at once, run, and wait.
        public var scopes: [Scope]
        /// The corrections of `api.classify`, as `STATUS[ PROBLEM-TYPE]=CATEGORY`, in order.
        public var classify: [String]
        /// `sync.bandwidth` and the rate in force; `nil` from an errorbusd before it.
        public var bandwidth: Bandwidth?

        public init(
            version: String, startedAt: String, statusLine: String, running: Bool, services: [ServiceStatus],
            incidents: [Incident], waitingForBudget: Int, retryBudgetTokens: Double, unreadableFiles: [UnreadableFile] = [],
            health: Health = Health(status: .ok, summary: "", checks: []), backlog: Backlog = Backlog(files: 0, bytes: 0),
            scopes: [Scope] = [], classify: [String] = [], bandwidth: Bandwidth? = nil
        ) {
            self.bandwidth = bandwidth
            self.health = health
            self.backlog = backlog
            self.scopes = scopes
            self.classify = classify
            self.version = version
            self.startedAt = startedAt
            self.statusLine = statusLine
            self.running = running
            self.services = services
            self.incidents = incidents
            self.waitingForBudget = waitingForBudget
            self.retryBudgetTokens = retryBudgetTokens
            self.unreadableFiles = unreadableFiles
        }
    }

    /// A verdict on delivery, as monitoring plugins give it.
    public enum HealthStatus: String, Codable, Sendable, CaseIterable, VarlinkEnum {
        case ok
        case warning
        case critical
    }

    /// Whether delivery is healthy, and why not.
    public struct Health: Codable, Sendable, Equatable, VarlinkNamedType {
        /// The worst of the checks.
        public var status: HealthStatus
        /// One line: what is wrong, or that nothing is.
        public var summary: String
        /// Each measure, its value and levels.
        public var checks: [HealthCheck]

        public init(status: HealthStatus, summary: String, checks: [HealthCheck]) {
            self.status = status
            self.summary = summary
            self.checks = checks
        }
    }

    /// One measure of delivery's health.
    public struct HealthCheck: Codable, Sendable, Equatable, VarlinkNamedType {
        /// `oldest-job`, `parked`, `dead-letters`, `needs-operator`, `incident-age`,
        /// `not-delivering`, `refused` or `free-space`: the key under `health.` its levels are set
        /// with.
        public var name: String
        public var status: HealthStatus
        /// The measure, in `unit`.
        public var value: Double
        /// `s`, `B` or empty for a count.
        public var unit: String
        /// From this value on (`free-space`: at or below it), a warning; none: not checked.
        public var warning: Double?
        /// From this value on (`free-space`: at or below it), critical; none: not checked.
        public var critical: Double?
        /// The measure in words, e.g. `oldest job waiting 20m`.
        public var text: String

        public init(name: String, status: HealthStatus, value: Double, unit: String, warning: Double?, critical: Double?, text: String) {
            self.name = name
            self.status = status
            self.value = value
            self.unit = unit
            self.warning = warning
            self.critical = critical
            self.text = text
        }
    }

    /// The files waiting for delivery (queued, uploading, or held by an incident).
    public struct Backlog: Codable, Sendable, Equatable, VarlinkNamedType {
        public var files: Int
        public var bytes: Int
        /// When the oldest of them was queued.
        public var oldestQueuedAt: String?
        /// `sync.backlog.max-files`, if set.
        public var maxFiles: Int?
        /// `sync.backlog.max-bytes`, if set.
        public var maxBytes: Int?
        /// `reject-new` or `drop-oldest`.
        public var overflow: String
        /// Outbox files left untaken for want of room (`reject-new`).
        public var rejectedFiles: Int
        /// Outbox files the store refused to queue (its disk is full, it is read-only): how many,
        /// their bytes, when it first refused the one refused longest ago, and why it last did;
        /// none while it takes every file.
        public var unqueuedFiles: Int?
        public var unqueuedBytes: Int?
        public var oldestUnqueuedAt: String?
        public var unqueuedReason: String?

        public init(
            files: Int, bytes: Int, oldestQueuedAt: String? = nil, maxFiles: Int? = nil, maxBytes: Int? = nil,
            overflow: String = "reject-new", rejectedFiles: Int = 0, unqueuedFiles: Int? = nil, unqueuedBytes: Int? = nil,
            oldestUnqueuedAt: String? = nil, unqueuedReason: String? = nil
        ) {
            self.unqueuedFiles = unqueuedFiles
            self.unqueuedBytes = unqueuedBytes
            self.oldestUnqueuedAt = oldestUnqueuedAt
            self.unqueuedReason = unqueuedReason
            self.files = files
            self.bytes = bytes
            self.oldestQueuedAt = oldestQueuedAt
            self.maxFiles = maxFiles
            self.maxBytes = maxBytes
            self.overflow = overflow
            self.rejectedFiles = rejectedFiles
        }
    }

    /// The rate upload bodies may take together (`sync.bandwidth`).
    public struct Bandwidth: Codable, Sendable, Equatable, VarlinkNamedType {
        /// The setting, as the configuration writes it: `off`, `512KiB/s`, or a timetable.
        public var setting: String
        /// The rate in force, in bytes per second; `nil`: no limit now.
        public var bytesPerSecond: Int?
        /// When the timetable changes the rate next; `nil`: never.
        public var until: String?

        public init(setting: String, bytesPerSecond: Int?, until: String?) {
            self.setting = setting
            self.bytesPerSecond = bytesPerSecond
            self.until = until
        }
    }

    /// One scope's adaptive concurrency.
    public struct Scope: Codable, Sendable, Equatable, VarlinkNamedType {
        /// The scope: the API's host.
        public var scope: String
        /// How many of its jobs may run at once now.
        public var limit: Int
        public var inFlight: Int
        /// Jobs waiting for a slot.
        public var waiting: Int

        public init(scope: String, limit: Int, inFlight: Int, waiting: Int) {
            self.scope = scope
            self.limit = limit
            self.inFlight = inFlight
            self.waiting = waiting
        }
    }

    /// What a service is doing.
    public enum ServiceState: String, Codable, Sendable, CaseIterable, VarlinkEnum {
        /// No open incident holds its work back: it delivers.
        case running
        /// An incident holds its work back; the bus is working on it (probe, back-off, sign-in).
        case held
        /// It delivers, but its API refuses some of its work (a rate, a quota, a full queue, a bad
        /// backend): an incident paces it at the rate the API serves, and tries the refused work
        /// again.
        case paced
        /// An incident needs an operator (rejected credentials, dead letters).
        case needsOperator
        /// Paused, by an operator or by a local `fatal` failure, until resumed.
        case paused
        /// The bus is not running (starting or stopping).
        case stopped
    }

    /// One service in `GetStatus`.
    public struct ServiceStatus: Codable, Sendable, Equatable, VarlinkNamedType {
        /// `sync`, `loader` or `auth`.
        public var name: String
        public var state: ServiceState
        /// Stored jobs waiting for their first (or next) upload.
        public var queued: Int
        /// Stored jobs being uploaded now.
        public var inFlight: Int
        /// Jobs parked under open incidents, as the bus holds them now.
        public var parked: Int
        /// Stored jobs the API rejected, waiting for an operator.
        public var dead: Int
        /// The newest incident of the service, open or resolved.
        public var lastError: LastError?
        /// The ids of its open incidents.
        public var incidents: [Int]

        public init(name: String, state: ServiceState, queued: Int, inFlight: Int, parked: Int, dead: Int, lastError: LastError?, incidents: [Int]) {
            self.name = name
            self.state = state
            self.queued = queued
            self.inFlight = inFlight
            self.parked = parked
            self.dead = dead
            self.lastError = lastError
            self.incidents = incidents
        }
    }

    /// An outbox file errorbusd cannot read.
    public struct UnreadableFile: Codable, Sendable, Equatable {
        /// Its name in the outbox.
        public var file: String
        /// Why it cannot be read, e.g. a permission denied.
        public var reason: String
        /// Since when errorbusd has known it.
        public var since: String

        public init(file: String, reason: String, since: String) {
            self.file = file
            self.reason = reason
            self.since = since
        }
    }

    /// The newest incident of a service.
    public struct LastError: Codable, Sendable, Equatable {
        public var incident: Int
        public var title: String
        public var message: String
        /// When it opened.
        public var at: String
        /// Whether it is still open.
        public var open: Bool

        public init(incident: Int, title: String, message: String, at: String, open: Bool) {
            self.incident = incident
            self.title = title
            self.message = message
            self.at = at
            self.open = open
        }
    }

    // MARK: - Incidents

    /// An error category, as the bus sorts failures.
    public enum Category: String, Codable, Sendable, CaseIterable, VarlinkEnum {
        case unreachable, rateLimited, transient, unauthenticated, invalid, fatal
    }

    /// An incident.
    public struct Incident: Codable, Sendable, Equatable, VarlinkNamedType {
        public var id: Int
        /// The service whose failure opened it.
        public var service: String
        public var category: Category
        /// The host, auth realm, service or job it concerns.
        public var scope: String
        /// A short stable code, e.g. `connectionRefused`.
        public var cause: String
        /// `waiting`, `canary`, `probing`, `reauthenticating`, `needsOperator`, `paused`,
        /// `releasing`, `pacing`, `settling`, `collecting` or `resolved`.
        public var state: String
        /// A few words, e.g. "API unreachable".
        public var title: String
        /// What happened.
        public var message: String
        /// What happens next or what to do.
        public var next: String?
        /// Failures it absorbed, the first one included.
        public var failures: Int
        /// Jobs parked under it now.
        public var parked: Int
        /// Jobs it released so far.
        public var released: Int
        /// Jobs it set aside as dead letters.
        public var deadLettered: Int
        /// What its last check (a probe, a trial upload, a sign-in) found when it failed: why its
        /// cause still holds.
        public var lastCheck: String?
        /// When it opened.
        public var openedAt: String
        /// The policy's next step: `canary`, `probe`, `reauthenticate` or `close`.
        public var nextAction: String?
        /// When the next step is due.
        public var nextActionAt: String?
        /// How it ended: `recovered`, `discarded`, `closed` or `shutdown`.
        public var resolution: String?
        /// When it ended.
        public var closedAt: String?

        public init(
            id: Int, service: String, category: Category, scope: String, cause: String, state: String,
            title: String, message: String, next: String?, failures: Int, parked: Int, released: Int,
            deadLettered: Int, lastCheck: String? = nil, openedAt: String, nextAction: String?, nextActionAt: String?,
            resolution: String?, closedAt: String?
        ) {
            self.id = id
            self.service = service
            self.category = category
            self.scope = scope
            self.cause = cause
            self.state = state
            self.title = title
            self.message = message
            self.next = next
            self.failures = failures
            self.parked = parked
            self.released = released
            self.deadLettered = deadLettered
            self.lastCheck = lastCheck
            self.openedAt = openedAt
            self.nextAction = nextAction
            self.nextActionAt = nextActionAt
            self.resolution = resolution
            self.closedAt = closedAt
        }

        /// Whether it is still open.
        public var isOpen: Bool { resolution == nil }
    }

    /// The parameters of `ListIncidents`.
    public struct IncidentFilter: Codable, Sendable, Equatable {
        /// Also the resolved incidents of the history.
        public var all: Bool?
        /// At most this many resolved ones (default 50).
        public var limit: Int?

        public init(all: Bool? = nil, limit: Int? = nil) {
            self.all = all
            self.limit = limit
        }
    }

    /// The reply of `ListIncidents`.
    public struct IncidentList: Codable, Sendable, Equatable {
        public var incidents: [Incident]
        public init(incidents: [Incident]) { self.incidents = incidents }
    }

    /// An incident's id: the parameters of `GetIncident`, the reply of `Pause`, the parameters
    /// of `NoSuchIncident`.
    public struct IncidentReference: Codable, Sendable, Equatable {
        public var id: Int
        public init(id: Int) { self.id = id }
    }

    /// The reply of `GetIncident`.
    public struct IncidentDetail: Codable, Sendable, Equatable {
        public var incident: Incident
        /// The ids of the jobs parked under it, in release order (at most 1000).
        public var parkedJobs: [String]
        /// The same jobs with their services and names (an outbox file's, a resource's).
        public var parked: [JobName]

        public init(incident: Incident, parked: [JobName]) {
            self.incident = incident
            self.parkedJobs = parked.map(\.id)
            self.parked = parked
        }
    }

    // MARK: - Jobs

    /// Where a stored job is. `parked`: errorbusd's bus holds it, under `incident`, or with no
    /// incident while its retry waits for the retry budget.
    public enum JobState: String, Codable, Sendable, CaseIterable, VarlinkEnum {
        case queued, inFlight, parked, delivered, deadLettered, discarded
    }

    /// A stored job.
    public struct Job: Codable, Sendable, Equatable, VarlinkNamedType {
        /// The job's id: the SHA-256 of the file, hex.
        public var id: String
        public var service: String
        /// The file's name in the outbox.
        public var file: String
        /// Its size in bytes.
        public var size: Int
        public var state: JobState
        /// Uploads tried, all told: those recorded and, for a job the bus holds, those since.
        public var attempts: Int
        /// Why the last attempt failed.
        public var lastError: String?
        /// The incident it is parked or dead-lettered under.
        public var incident: Int?
        /// Why it was dead-lettered or discarded.
        public var reason: String?
        public var createdAt: String
        public var updatedAt: String

        public init(
            id: String, service: String, file: String, size: Int, state: JobState, attempts: Int, lastError: String?,
            incident: Int?, reason: String?, createdAt: String, updatedAt: String
        ) {
            self.id = id
            self.service = service
            self.file = file
            self.size = size
            self.state = state
            self.attempts = attempts
            self.lastError = lastError
            self.incident = incident
            self.reason = reason
            self.createdAt = createdAt
            self.updatedAt = updatedAt
        }
    }

    /// The parameters of `ListJobs`.
    public struct JobFilter: Codable, Sendable, Equatable {
        public var service: String?
        public var state: JobState?
        public var offset: Int?
        public var limit: Int?

        public init(service: String? = nil, state: JobState? = nil, offset: Int? = nil, limit: Int? = nil) {
            self.service = service
            self.state = state
            self.offset = offset
            self.limit = limit
        }
    }

    /// The parameters of `ListDeadLetters`.
    public struct DeadLetterFilter: Codable, Sendable, Equatable {
        public var incident: Int?
        public init(incident: Int? = nil) { self.incident = incident }
    }

    /// The reply of `ListJobs` and `ListDeadLetters`.
    public struct JobList: Codable, Sendable, Equatable {
        public var jobs: [Job]
        /// How many jobs match the filter in all (every page).
        public var total: Int

        public init(jobs: [Job], total: Int) {
            self.jobs = jobs
            self.total = total
        }
    }

    /// A job by id: the parameters of `Cancel` and `NoSuchJob`.
    public struct JobReference: Codable, Sendable, Equatable {
        /// For `Cancel`, also the id's first characters (at least ``minimumJobIDPrefix``) when
        /// no other job's id starts with them.
        public var id: String
        /// Default: sync.
        public var service: String?

        public init(id: String, service: String? = nil) {
            self.id = id
            self.service = service
        }
    }

    /// How many of a job's first characters name it at the least, when no other job's id
    /// starts with them (as git takes an abbreviated commit id).
    public static let minimumJobIDPrefix = 4

    /// A job by its id and what people call it.
    public struct JobName: Codable, Sendable, Equatable, VarlinkNamedType {
        public var id: String
        public var service: String
        /// An outbox file's name, a resource's; `nil` when the job has none.
        public var name: String?

        public init(id: String, service: String, name: String?) {
            self.id = id
            self.service = service
            self.name = name
        }
    }

    /// The parameters of `AmbiguousJob`.
    public struct AmbiguousJobID: Codable, Sendable, Equatable {
        /// The id as given.
        public var id: String
        public var service: String
        /// How many jobs' ids start with it.
        public var matches: Int
        /// A few of them, in id order.
        public var candidates: [JobName]

        public init(id: String, service: String, matches: Int, candidates: [JobName]) {
            self.id = id
            self.service = service
            self.matches = matches
            self.candidates = candidates
        }
    }

    /// The parameters of `JobNotActionable`.
    public struct JobProblem: Codable, Sendable, Equatable {
        public var id: String
        public var service: String
        public var state: JobState
        public var reason: String

        public init(id: String, service: String, state: JobState, reason: String) {
            self.id = id
            self.service = service
            self.state = state
            self.reason = reason
        }
    }

    // MARK: - Operator actions

    /// What `Retry` and `Discard` act on: exactly one of the three.
    public struct Target: Codable, Sendable, Equatable {
        public var incident: Int?
        /// A job's id, or its first characters (at least ``minimumJobIDPrefix``) when no other
        /// job's id starts with them.
        public var job: String?
        public var deadLetters: Bool?

        public init(incident: Int? = nil, job: String? = nil, deadLetters: Bool? = nil) {
            self.incident = incident
            self.job = job
            self.deadLetters = deadLetters
        }
    }

    /// How many things a method acted on.
    public struct Count: Codable, Sendable, Equatable {
        public var count: Int
        /// Of those, the jobs that were running (`Discard` of a job under way): each stops when
        /// its run ends, unless that run succeeds. Absent when none was.
        public var running: Int?
        public init(count: Int, running: Int? = nil) {
            self.count = count
            self.running = running
        }
    }

    /// A service by name.
    public struct ServiceReference: Codable, Sendable, Equatable {
        public var service: String
        public init(service: String) { self.service = service }
    }

    /// The reply of `GetMetrics`.
    public struct MetricsExposition: Codable, Sendable, Equatable {
        /// Prometheus text exposition format, version 0.0.4.
        public var text: String

        public init(text: String) { self.text = text }
    }

    /// The reply of `Reauthenticate`.
    public struct Reauthentication: Codable, Sendable, Equatable {
        /// `renewed`, `rejected` or `unavailable`.
        public var outcome: String
        /// What happened, for a person.
        public var message: String

        public init(outcome: String, message: String) {
            self.outcome = outcome
            self.message = message
        }
    }

    // MARK: - Events

    /// One event of `Watch`.
    public struct Event: Codable, Sendable, Equatable {
        /// `incidentOpen` (replay), `synchronized` (end of replay), or a bus event:
        /// `incidentOpened`, `policyScheduled`, `probeFailed`, `canaryFailed`, `reauthStarted`,
        /// `escalated`, `releaseStarted`, `releaseStopped`, `incidentResolved`,
        /// `jobDeadLettered`, `budgetExhausted`, `parkingOverflow`, `serviceAborted`; `end` when
        /// the bus stops.
        public var kind: String
        /// Whether it replays the state at the start of the watch.
        public var replay: Bool
        /// When the daemon sent it.
        public var at: String
        public var incident: Incident?
        /// The job it concerns, as `service/id`.
        public var job: String?
        public var reason: String?

        public init(kind: String, replay: Bool = false, at: String, incident: Incident? = nil, job: String? = nil, reason: String? = nil) {
            self.kind = kind
            self.replay = replay
            self.at = at
            self.incident = incident
            self.job = job
            self.reason = reason
        }
    }

    // MARK: - Error parameters

    /// The parameters of `PermissionDenied`.
    public struct PermissionProblem: Codable, Sendable, Equatable {
        /// The method that was refused.
        public var method: String
        /// The caller's uid.
        public var uid: Int
        /// The group whose members may call it; absent when only root may.
        public var group: String?

        public init(method: String, uid: Int, group: String?) {
            self.method = method
            self.uid = uid
            self.group = group
        }
    }

    /// The parameters of `ConfigurationUnusable` and `ReloadFailed`: a configuration errorbusd
    /// cannot run with, where and why.
    public struct ConfigurationProblem: Codable, Sendable, Equatable {
        /// The configuration file, when the problem is in one.
        public var file: String?
        /// The 1-based line in `file`, when known.
        public var line: Int?
        /// The key at fault, dot-separated (`sync.concurrency`).
        public var key: String?
        /// The environment variable the bad value came from, when it came from one.
        public var environmentVariable: String?
        /// What is wrong.
        public var reason: String
        /// All of it in one line: `file:line: key: reason`.
        public var text: String

        public init(file: String? = nil, line: Int? = nil, key: String? = nil, environmentVariable: String? = nil, reason: String, text: String) {
            self.file = file
            self.line = line
            self.key = key
            self.environmentVariable = environmentVariable
            self.reason = reason
            self.text = text
        }
    }

    /// The parameters of errors that only say why (`InvalidTarget`, `StoreUnavailable`).
    public struct Problem: Codable, Sendable, Equatable {
        public var reason: String
        public init(reason: String) { self.reason = reason }
    }
}
