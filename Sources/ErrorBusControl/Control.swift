public import Varlink

/// `io.errorbus.Control`: the Varlink interface errorbusd serves on its control socket and
/// `errorbusctl` calls.
///
/// The same declarations serve both ends: errorbusd implements the methods
/// (`ErrorBusDaemon.ControlServer`), errorbusctl calls them, and the interface definition
/// (`varlinkctl introspect`) is derived from the Swift types below. Reading methods are open to
/// anyone who can open the socket; the methods marked *mutating* answer `PermissionDenied` unless
/// the caller is root or a member of `control.group`.
///
/// Times are ISO 8601 strings in UTC, to the millisecond (`2026-11-22T10:42:07.250Z`); counts are
/// jobs.
public enum Control {
    /// `io.errorbus.Control`
    public static let interfaceName = "io.errorbus.Control"

    /// The errors errorbusd's Varlink server answers with about a connection itself (too many
    /// connections, a message too large), declared as `io.errorbus.varlink`.
    public static let serverErrors = VarlinkServerErrors(interfaceName: "io.errorbus.varlink")

    // MARK: - Reading

    /// `GetStatus`
    public static let getStatus = VarlinkMethod<VarlinkEmpty, Status>(
        interface: interfaceName,
        name: "GetStatus",
        documentation: "The daemon's state: each service's state and job counts, its last error,\nand every open incident with its next action and when."
    )

    /// `ListIncidents`
    public static let listIncidents = VarlinkMethod<IncidentFilter, IncidentList>(
        interface: interfaceName,
        name: "ListIncidents",
        documentation: "Open incidents, oldest first; with 'all', the resolved ones of the history too,\nnewest first, at most 'limit' of them (default 50)."
    )

    /// `GetIncident`
    public static let getIncident = VarlinkMethod<IncidentReference, IncidentDetail>(
        interface: interfaceName,
        name: "GetIncident",
        documentation: "One incident, open or from the history, with the jobs parked under it: their ids\n(parkedJobs), and their ids, services and names (parked), in release order."
    )

    /// `ListJobs`
    public static let listJobs = VarlinkMethod<JobFilter, JobList>(
        interface: interfaceName,
        name: "ListJobs",
        documentation: "One page of stored jobs, oldest first, optionally of one service and in one\nstate (default: offset 0, limit 100, at most 1000)."
    )

    /// `ListDeadLetters`
    public static let listDeadLetters = VarlinkMethod<DeadLetterFilter, JobList>(
        interface: interfaceName,
        name: "ListDeadLetters",
        documentation: "The jobs the API rejected, oldest first: all, or those of one incident."
    )

    /// `Watch`
    public static let watch = VarlinkMethod<VarlinkEmpty, Event>(
        interface: interfaceName,
        name: "Watch",
        documentation: "The bus's events as they happen; call with 'more'. First the current state is\nreplayed (one 'incidentOpen' event per open incident, with 'replay' set), then\none 'synchronized' event, then live events."
    )

    // MARK: - Mutating

    /// `Retry` (mutating)
    public static let retry = VarlinkMethod<Target, Count>(
        interface: interfaceName,
        name: "Retry",
        documentation: "Mutating. Takes an incident's next step now, queues a dead-lettered job again (or\nretries the incident a parked job waits under), or queues every dead letter\nagain ('deadLetters'). Set exactly one of 'incident', 'job', 'deadLetters'.\nA job is named by its id or by its first characters (4 at least)."
    )

    /// `Discard` (mutating)
    public static let discard = VarlinkMethod<Target, Count>(
        interface: interfaceName,
        name: "Discard",
        documentation: "Mutating. Gives up an open incident (every job parked under it is discarded), one\njob (dead-lettered, queued, parked, or running: a running one stops when its\nrun ends unless that run succeeds, and is counted in 'running'), or every dead\nletter ('deadLetters'). Set exactly one.\nA job is named by its id or by its first characters (4 at least)."
    )

    /// `Cancel` (mutating)
    public static let cancel = VarlinkMethod<JobReference, VarlinkEmpty>(
        interface: interfaceName,
        name: "Cancel",
        documentation: "Mutating. Stops one parked job (service default: sync), or a running one when\nits run ends unless that run succeeds; it is discarded. The job is named by its\nid or by its first characters (4 at least)."
    )

    /// `Pause` (mutating)
    public static let pause = VarlinkMethod<ServiceReference, IncidentReference>(
        interface: interfaceName,
        name: "Pause",
        documentation: "Mutating. Pauses a service: its new work parks under a 'fatal' incident until\nResume. Returns that incident."
    )

    /// `Resume` (mutating)
    public static let resume = VarlinkMethod<ServiceReference, Count>(
        interface: interfaceName,
        name: "Resume",
        documentation: "Mutating. Resumes a paused service: every 'fatal' incident holding it releases\nits jobs. Returns how many incidents were resumed."
    )

    /// `Reauthenticate` (mutating)
    public static let reauthenticate = VarlinkMethod<VarlinkEmpty, Reauthentication>(
        interface: interfaceName,
        name: "Reauthenticate",
        documentation: "Mutating. Drops the access token and asks for a new one now."
    )

    /// `Reload` (mutating)
    public static let reload = VarlinkMethod<VarlinkEmpty, VarlinkEmpty>(
        interface: interfaceName,
        name: "Reload",
        documentation: "Mutating. Reads the configuration again, as SIGHUP does. A configuration that\ndoes not load is answered with ReloadFailed and the running one kept."
    )

    /// `GetMetrics`
    public static let getMetrics = VarlinkMethod<VarlinkEmpty, MetricsExposition>(
        interface: interfaceName,
        name: "GetMetrics",
        documentation: "errorbusd's metrics (swift-metrics) in the Prometheus text exposition format."
    )

    // MARK: - Errors

    /// `NoSuchIncident`
    public static let noSuchIncident = VarlinkErrorDeclaration<IncidentReference>(
        interface: interfaceName,
        name: "NoSuchIncident",
        documentation: "No incident has this id (or it is no longer open, for a method that needs an\nopen one)."
    )

    /// `NoSuchJob`
    public static let noSuchJob = VarlinkErrorDeclaration<JobReference>(
        interface: interfaceName,
        name: "NoSuchJob",
        documentation: "errorbusd has no job of this id."
    )

    /// `AmbiguousJob`
    public static let ambiguousJob = VarlinkErrorDeclaration<AmbiguousJobID>(
        interface: interfaceName,
        name: "AmbiguousJob",
        documentation: "The id names a job by its first characters (4 at least), and more than one\njob's id starts with them: matches says how many, candidates shows a few."
    )

    /// `JobNotActionable`
    public static let jobNotActionable = VarlinkErrorDeclaration<JobProblem>(
        interface: interfaceName,
        name: "JobNotActionable",
        documentation: "The job exists, but the method does not act on a job in its state; reason says\nwhat becomes of it instead."
    )

    /// `NoSuchService`
    public static let noSuchService = VarlinkErrorDeclaration<ServiceReference>(
        interface: interfaceName,
        name: "NoSuchService",
        documentation: "errorbusd has no service of this name (sync, loader, auth)."
    )

    /// `PermissionDenied`
    public static let permissionDenied = VarlinkErrorDeclaration<PermissionProblem>(
        interface: interfaceName,
        name: "PermissionDenied",
        documentation: "The method changes something; only root and members of the control group may\ncall it."
    )

    /// `InvalidTarget`
    public static let invalidTarget = VarlinkErrorDeclaration<Problem>(
        interface: interfaceName,
        name: "InvalidTarget",
        documentation: "The call must name exactly one of 'incident', 'job' and 'deadLetters'."
    )

    /// `ReloadFailed`
    public static let reloadFailed = VarlinkErrorDeclaration<ConfigurationProblem>(
        interface: interfaceName,
        name: "ReloadFailed",
        documentation: "The configuration did not load; the running one is kept."
    )

    /// `ConfigurationUnusable`
    public static let configurationUnusable = VarlinkErrorDeclaration<ConfigurationProblem>(
        interface: interfaceName,
        name: "ConfigurationUnusable",
        documentation: "errorbusd cannot start: its configuration cannot be used. Every call made while it\nwas starting is answered with this error, then it exits with status 78. Fix the\nconfiguration, then restart errorbusd (systemctl restart errorbusd)."
    )

    /// `StoreUnavailable`
    public static let storeUnavailable = VarlinkErrorDeclaration<Problem>(
        interface: interfaceName,
        name: "StoreUnavailable",
        documentation: "The job store could not be read or written."
    )

    /// The interface's declaration.
    public static let interface: VarlinkInterface = {
        do {
            return try VarlinkInterface(
                name: interfaceName,
                documentation: "Control and observe errorbusd: its services, incidents, jobs and dead letters.",
                members: [
                    .type(ServiceStatus.self, documentation: "One service of errorbusd."),
                    .type(Health.self, documentation: "Whether delivery is healthy by the thresholds of health.*, and why not;\nerrorbusctl health and the STATUS= line give the same verdict."),
                    .type(HealthCheck.self, documentation: "One measure of delivery's health: oldest-job, parked, dead-letters (waiting for an\noperator), needs-operator, incident-age, not-delivering, refused or free-space\n(a problem at or below its levels)."),
                    .type(Backlog.self, documentation: "The files waiting for delivery (queued, uploading, or held by an incident), and\nthe limits of sync.backlog; apart, those left in the outbox for room\n(rejectedFiles) and those the store refused to queue (unqueued*)."),
                    .type(Scope.self, documentation: "One scope's adaptive concurrency: how many of its jobs may run at once, run,\nand wait."),
                    .type(Bandwidth.self, documentation: "The rate upload bodies take together (sync.bandwidth): the setting, the rate in\nforce (bytes per second, none without a limit) and when a timetable changes it."),
                    .type(Incident.self, documentation: "An incident: one cause, its failures and the work it holds back."),
                    .type(Job.self, documentation: "A job of the store (an outbox file of sync)."),
                    .type(JobName.self, documentation: "A job by its id and what people call it (an outbox file's name, a resource's)."),
                    .method(getStatus), .method(listIncidents), .method(getIncident), .method(listJobs),
                    .method(listDeadLetters), .method(watch),
                    .method(retry), .method(discard), .method(cancel), .method(pause), .method(resume),
                    .method(reauthenticate), .method(reload), .method(getMetrics),
                    .error(noSuchIncident), .error(noSuchJob), .error(ambiguousJob), .error(jobNotActionable), .error(noSuchService), .error(permissionDenied),
                    .error(invalidTarget), .error(reloadFailed), .error(configurationUnusable), .error(storeUnavailable),
                ]
            )
        } catch {
            // The declarations above are fixed; the tests check the definition.
            fatalError("io.errorbus.Control is declared wrongly: \(error)")
        }
    }()
}
