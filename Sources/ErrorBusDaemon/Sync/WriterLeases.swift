import CFileIO
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// Read leases on outbox files: how errorbusd tells that no process has a file open for writing.
///
/// A producer that writes its file in place (`exec 3>file`, a logger that keeps its file open,
/// `echo … >>file`) may pause longer than `sync.settle-time` between writes. A read lease
/// (`fcntl(F_SETLEASE, F_RDLCK)`) is refused with `EAGAIN` while any process has the file open for
/// writing: the ingest does not take such a file, and a delivered file is not removed while one
/// does. While errorbusd holds the lease, a writer's `open` for writing waits for it: so it is held
/// only around a hash (given up at once when a writer's open breaks it) or around the last check
/// and the removal, milliseconds, never for the kernel's `lease-break-time`.
///
/// A lease needs the file's ownership or `CAP_LEASE` (errorbusd.service grants it), and a file
/// system that has leases (not NFS, for one). Where one cannot be had for any reason but a
/// writer, errorbusd does what it does without: a file written in place is taken once it has not
/// changed for the settle time. The journal says so once, not per file.
final class WriterLeases: Sendable {
    /// What asking for a lease came to.
    enum Outcome: Sendable, Equatable {
        /// Held: no process has the file open for writing, and none can open it so until it is
        /// released.
        case held
        /// A process has the file open for writing.
        case writerHasItOpen
        /// Leases cannot be had here (told once): go on without.
        case unavailable
    }

    private let logger: Logger
    private let told = Atomic<Bool>(false)

    /// The signal a lease break sends errorbusd: one whose default is to be ignored. (The kernel's
    /// default, `SIGIO`, would end the process.) Nothing waits for it: the lease is held briefly
    /// and checked with `F_GETLEASE`.
    static let breakSignal = SIGURG

    init(logger: Logger) {
        self.logger = logger
    }

    /// Takes a read lease on `descriptor`, a file of the outbox open read-only.
    func take(_ descriptor: CInt, path: String) -> Outcome {
        do {
            try SystemCall.check("fcntl(F_SETLEASE)", path: path) { errorbus_take_read_lease(descriptor, Self.breakSignal) }
            return .held
        } catch where error.errnoCode == EAGAIN {
            return .writerHasItOpen
        } catch {
            if !told.exchange(true, ordering: .relaxed) {
                logger.warning(
                    "cannot take a read lease on outbox files (\(error)): errorbusd cannot tell whether a writer still has a file open, and takes a file written in place once it has not changed for sync.settle-time. Give errorbusd CAP_LEASE (errorbusd.service does) on a file system with leases, or have producers rename finished files into the outbox"
                )
            }
            return .unavailable
        }
    }

    /// Whether a writer's open is breaking the lease on `descriptor`: it waits for the release.
    func isBreaking(_ descriptor: CInt) -> Bool {
        errorbus_holds_read_lease(descriptor) == 0
    }

    /// Releases the lease: a writer waiting for it goes on at once.
    func release(_ descriptor: CInt) {
        _ = errorbus_release_lease(descriptor)
    }
}
