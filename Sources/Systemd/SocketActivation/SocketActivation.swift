/// The listening sockets (or other descriptors) a service manager passed to this process.
///
/// With socket activation systemd binds the sockets of a `.socket` unit itself and hands them to
/// the service as descriptors 3, 4, … (`$LISTEN_FDS`, `$LISTEN_PID`), each named by the unit's
/// `FileDescriptorName=` (`$LISTEN_FDNAMES`, default: the socket unit's name).
///
/// ```swift
/// let activation = try SocketActivation.fromEnvironment()
/// if let control = activation.first(named: "control") {
///     // SwiftNIO takes ownership and closes it with the channel:
///     let server = try await ServerBootstrap(group: group)
///         .bind(control.fileDescriptor) { channel in … }
/// } else {
///     // not activated: bind the socket ourselves
/// }
/// ```
///
/// The descriptors are raw `CInt`s owned by the caller, who adopts each exactly once: a stream
/// socket with `ServerBootstrap.bind(_:childChannelInitializer:)` or
/// `ServerBootstrap.withBoundSocket(_:)`, a datagram socket with
/// `DatagramBootstrap.withBoundSocket(_:)`, a FIFO or other file with `NIOPipeBootstrap`.
/// Descriptors nobody adopts stay open for the life of the process, which keeps the socket
/// bound (harmless, and what systemd expects).
///
/// ## The environment is left in place
///
/// ``fromEnvironment()`` calls `sd_listen_fds_with_names` with `unset_environment = 0`, on purpose:
/// - `unsetenv` is not thread-safe, and a Swift server has other threads reading the
///   environment (any `getenv`, including libsystemd's own) by the time it starts listening;
/// - child processes cannot mistake the variables for theirs: `$LISTEN_PID` names this process,
///   and libsystemd sets `FD_CLOEXEC` on the passed descriptors, so children inherit neither;
/// - the call stays idempotent: calling it again returns the same descriptors (adopt them once).
public struct SocketActivation: Sendable, Hashable {
    /// One passed descriptor and its name.
    public struct Descriptor: Sendable, Hashable, CustomStringConvertible {
        /// The descriptor number: 3 for the first one (`SD_LISTEN_FDS_START`), then 4, 5, …
        public var fileDescriptor: CInt
        /// Its `FileDescriptorName=`, or `"unknown"` when the service manager passed no names.
        public var name: String

        /// Creates a descriptor entry.
        public init(fileDescriptor: CInt, name: String) {
            self.fileDescriptor = fileDescriptor
            self.name = name
        }

        public var description: String { "\(self.name)=\(self.fileDescriptor)" }
    }

    /// Every passed descriptor, in order. Empty when the process was not socket-activated.
    public var descriptors: [Descriptor]

    /// Creates the value from descriptors obtained some other way.
    public init(descriptors: [Descriptor]) {
        self.descriptors = descriptors
    }

    /// The descriptors this process was started with, from `sd_listen_fds_with_names`.
    ///
    /// Returns an empty value when `$LISTEN_PID` is unset or names another process. Throws when
    /// the variables are malformed, for example when `$LISTEN_FDNAMES` does not have one name per
    /// descriptor.
    public static func fromEnvironment() throws(SystemdError) -> SocketActivation {
        SocketActivation(
            descriptors: try Libsystemd.listenFileDescriptorsWithNames().map {
                Descriptor(fileDescriptor: $0.0, name: $0.1)
            }
        )
    }

    /// Whether no descriptor was passed.
    public var isEmpty: Bool { self.descriptors.isEmpty }

    /// Every descriptor named `name`, in order. A `.socket` unit with several `ListenStream=`
    /// lines passes several descriptors under one name.
    public func descriptors(named name: String) -> [Descriptor] {
        self.descriptors.filter { $0.name == name }
    }

    /// The first descriptor named `name`, if any.
    public func first(named name: String) -> Descriptor? {
        self.descriptors.first { $0.name == name }
    }
}
