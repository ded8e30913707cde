import ErrorBus
import ErrorBusSupport
package import Logging
package import NIOCore
import NIOPosix
import ServiceLifecycle

/// Wakes the bus when the host's network changes: a link goes up or down, an address or a route
/// comes or goes (a laptop joins Wi-Fi, a VPN connects, DHCP renews onto another network).
///
/// An `unreachable` incident polls its probe on a back-off schedule; when the network changes,
/// the probe should run now rather than at its next step. The daemon runs one of these in its
/// service group with `onChange: { await bus.networkChanged() }`.
///
/// It listens on an `AF_NETLINK`/`NETLINK_ROUTE` socket subscribed to `RTMGRP_LINK`,
/// `RTMGRP_IPV4_IFADDR`, `RTMGRP_IPV6_IFADDR`, `RTMGRP_IPV4_ROUTE` and `RTMGRP_IPV6_ROUTE`, and
/// debounces: one network change is a burst of notifications (a new link brings addresses, then
/// routes, IPv6 ones a moment later after duplicate address detection), and the callback runs
/// once per burst, after `debounce` without notifications or `maximumDelay` after the first,
/// whichever is sooner.
///
/// **How it reads.** The socket is non-blocking and handed to SwiftNIO
/// (`NIOPipeBootstrap.takingOwnershipOfDescriptor(input:)`): netlink is a datagram socket, and
/// `read(2)` on it returns one datagram at a time, which is all a pipe channel does. So no thread
/// ever blocks in `recv`, the event loop's epoll wakes the reader, and stopping is ordinary task
/// cancellation: the inbound stream ends and `executeThenClose` closes the descriptor. If the
/// kernel drops notifications because they came faster than they were read (`ENOBUFS`), the read
/// fails and closes the channel; that counts as a change, and a new socket is opened.
///
/// **When netlink is unavailable** (no `AF_NETLINK` in a restricted sandbox, a seccomp filter),
/// it logs one warning and idles until shutdown instead of returning: a service that returns ends
/// a `ServiceGroup` with the default termination behaviour, and the daemon works without this —
/// probes keep their own schedule.
///
/// It stops on graceful shutdown (and on cancellation) within an event-loop tick; a callback in
/// progress sees the cancellation.
package struct NetworkChangeMonitor: Service {
    private let debounce: Duration
    private let maximumDelay: Duration
    private let clock: Timeline
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let onChange: @Sendable (NetworkChange) async -> Void
    private let openSocket: @Sendable () throws(SystemCallError) -> CInt

    /// - Parameters:
    ///   - debounce: how long without notifications ends a burst.
    ///   - maximumDelay: the longest a burst is held back while notifications keep coming.
    ///   - clock: the clock debouncing runs on.
    ///   - eventLoopGroup: where the socket is read.
    ///   - logger: one line per change (info), the warning when netlink is unavailable.
    ///   - onChange: called once per burst, never twice at once.
    package init(
        debounce: Duration = .milliseconds(500),
        maximumDelay: Duration = .seconds(5),
        clock: some Clock<Duration> = ContinuousClock(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        onChange: @escaping @Sendable () async -> Void
    ) {
        self.init(
            debounce: debounce,
            maximumDelay: maximumDelay,
            clock: clock,
            eventLoopGroup: eventLoopGroup,
            logger: logger,
            onBurst: { _ in await onChange() }
        )
    }

    /// Like ``init(debounce:maximumDelay:clock:eventLoopGroup:logger:onChange:)``, with a
    /// callback that also gets what the burst consisted of.
    package init(
        debounce: Duration = .milliseconds(500),
        maximumDelay: Duration = .seconds(5),
        clock: some Clock<Duration> = ContinuousClock(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        onBurst: @escaping @Sendable (NetworkChange) async -> Void
    ) {
        self.init(
            debounce: debounce,
            maximumDelay: maximumDelay,
            clock: clock,
            eventLoopGroup: eventLoopGroup,
            logger: logger,
            openSocket: { () throws(SystemCallError) in try NetlinkSocket.open() },
            onBurst: onBurst
        )
    }

    /// The designated initializer; tests inject `openSocket`.
    init(
        debounce: Duration,
        maximumDelay: Duration,
        clock: some Clock<Duration>,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger,
        openSocket: @escaping @Sendable () throws(SystemCallError) -> CInt,
        onBurst: @escaping @Sendable (NetworkChange) async -> Void
    ) {
        self.debounce = debounce
        self.maximumDelay = maximumDelay
        self.clock = Timeline(clock)
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.openSocket = openSocket
        self.onChange = onBurst
    }

    package func run() async throws {
        let coalescer = NetworkChangeCoalescer(quiet: debounce, maximumDelay: maximumDelay, clock: clock)
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    try? await coalescer.run { change in
                        logger.info(
                            "Network changed; waking the bus",
                            metadata: [
                                "errorbus.network.links": "\(change.links)",
                                "errorbus.network.addresses": "\(change.addresses)",
                                "errorbus.network.routes": "\(change.routes)",
                                "errorbus.network.lost": "\(change.notificationsLost)",
                            ]
                        )
                        await onChange(change)
                    }
                }
                await listen(into: coalescer)
                group.cancelAll()
            }
        }
    }

    /// Reads notifications into `coalescer` until cancelled, reopening the socket after a read
    /// failure; idles until cancelled when no socket can be opened at all.
    private func listen(into coalescer: NetworkChangeCoalescer) async {
        var opened = false
        while !Task.isCancelled {
            let descriptor: CInt
            do {
                descriptor = try openSocket()
            } catch {
                if opened {
                    // It worked before (a transient shortage, e.g. EMFILE): try again later.
                    logger.warning("Cannot reopen the netlink socket; retrying", metadata: ["error": "\(error)"])
                    try? await clock.sleep(clock.now().advanced(by: maximumDelay))
                    continue
                }
                logger.warning(
                    "Network changes cannot be watched; probes keep their own schedule",
                    metadata: ["error": "\(error)"]
                )
                try? await gracefulShutdown()
                return
            }
            opened = true
            let ending: String
            do {
                try await read(descriptor, into: coalescer)
                ending = "end of file"
            } catch {
                ending = "\(error)"
            }
            if Task.isCancelled { return }
            // ENOBUFS: notifications were lost, so something changed. Anything else that ends
            // the channel is treated alike: count a change, and open a new socket after a pause
            // (so a socket that keeps failing cannot spin).
            logger.notice("Netlink socket failed; reopening it", metadata: ["error": "\(ending)"])
            coalescer.record(NetworkChange(notificationsLost: true))
            try? await clock.sleep(clock.now().advanced(by: debounce))
        }
    }

    /// Adopts `descriptor` into SwiftNIO and records every datagram until cancelled.
    private func read(_ descriptor: CInt, into coalescer: NetworkChangeCoalescer) async throws {
        let channel: NIOAsyncChannel<ByteBuffer, Never>
        do {
            channel = try await NIOPipeBootstrap(group: eventLoopGroup)
                // One datagram per read; 64 KiB holds the largest a route dump sends.
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 1024))
                .takingOwnershipOfDescriptor(input: descriptor) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, Never>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            // NIO did not take the descriptor: it is still ours to close.
            try? SystemCall.close(descriptor)
            throw error
        }
        logger.info("Watching network changes (netlink: links, addresses, routes)")
        try await channel.executeThenClose { inbound in
            for try await datagram in inbound {
                coalescer.record(NetlinkMessages.summarize(datagram))
            }
        }
    }
}
