import CNetlink
import ErrorBusSupport
import Foundation
import Glibc
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import ErrorBusDaemon

/// `NetworkChangeMonitor` on real sockets: netlink in a network namespace made for the test, and
/// socket pairs standing in for netlink where the test must decide what arrives.
@Suite(.timeLimit(.minutes(1)))
struct NetworkChangeMonitorTests {
    // MARK: - In a network namespace

    /// Root, `unshare`, `nsenter` and `ip`: what a namespace of the test's own needs.
    static let namespaceTools: (unshare: String, nsenter: String, ip: String)? = {
        guard geteuid() == 0, let unshare = ChildProcess.find("unshare"), let nsenter = ChildProcess.find("nsenter"),
            let ip = ChildProcess.find("ip")
        else { return nil }
        return (unshare, nsenter, ip)
    }()

    /// The `network-test-helper` executable, built next to the test binary.
    static var helperPath: String {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("network-test-helper").path
    }

    /// The helper runs in a fresh network namespace (`unshare --net`, which dies with it: nothing
    /// to clean up, whatever happens to the test). Two bursts of `ip` commands, each several
    /// links, addresses and routes, must be exactly two changes, numbered 1 and 2; SIGTERM stops
    /// the helper promptly and cleanly.
    @Test(.enabled(if: namespaceTools != nil, "needs root, unshare, nsenter and ip"))
    func aBurstInAFreshNamespaceIsOneChange() async throws {
        let tools = try #require(Self.namespaceTools)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("errorbus-netns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let helper = try ChildProcess(tools.unshare, ["--net", Self.helperPath, "500"])
        defer { helper.signal(SIGKILL) }
        guard await helper.waitForStandardOutput(containing: "Watching network changes") else {
            let finished = await helper.waitForExit()
            Issue.record("the helper did not start watching: status \(finished.status), \(finished.standardOutput) \(finished.standardError)")
            return
        }

        // `ip -batch` runs each burst in one process, a few milliseconds from first to last.
        func burst(_ number: Int, _ commands: [String]) async throws {
            let file = directory.appendingPathComponent("burst-\(number)").path
            try (commands.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let ran = try await ChildProcess.run(
                tools.nsenter, ["--target", "\(helper.processIdentifier)", "--net", tools.ip, "-batch", file]
            )
            try #require(ran.status == 0, "ip -batch: \(ran.standardError)")
            #expect(await helper.waitForStandardOutput(containing: "change \(number) "))
        }
        try await burst(1, [
            "link set lo up",
            "address add 192.0.2.1/24 dev lo",
            "address add 2001:db8::1/64 dev lo nodad",
            "route add 203.0.113.0/24 dev lo",
        ])
        try await burst(2, [
            "route add 198.51.100.0/24 dev lo",
            "address add 192.0.2.2/24 dev lo",
        ])

        // SIGTERM stops the monitor: a thread left in a netlink read would hold the helper until
        // the suite's time limit.
        helper.terminate()
        let finished = await helper.waitForExit()
        #expect(finished.status == 0, "stderr: \(finished.standardError)")
        #expect(finished.outputLines.last == "stopped")

        let changes = finished.outputLines.filter { $0.hasPrefix("change ") }
        try #require(changes.count == 2, "\(finished.standardOutput)")
        let first = Self.counts(changes[0])
        #expect(first["links"] ?? 0 >= 1)
        #expect(first["addresses"] ?? 0 >= 3, "127.0.0.1 and ::1 when lo comes up, then two more")
        #expect(first["routes"] ?? 0 >= 3)
        #expect(first["notifications"] ?? 0 > 5, "a burst of many notifications is one change")
        let second = Self.counts(changes[1])
        #expect(second["addresses"] ?? 0 >= 1)
        #expect(second["routes"] ?? 0 >= 2)
    }

    /// `change 1 notifications=7 links=1 …` as a dictionary.
    static func counts(_ line: String) -> [String: Int] {
        var counts: [String: Int] = [:]
        for field in line.split(separator: " ") {
            let parts = field.split(separator: "=")
            if parts.count == 2, let value = Int(parts[1]) { counts[String(parts[0])] = value }
        }
        return counts
    }

    // MARK: - In process

    /// With the host's real netlink socket: graceful shutdown ends `run()`, with no thread left
    /// in a read (which would hold the group until the suite's time limit). How fast is for
    /// benchmarks, not for a test on a loaded machine.
    @Test func gracefulShutdownStopsItPromptly() async throws {
        let logs = LogRecorder()
        let monitor = NetworkChangeMonitor(logger: logs.logger) {}
        let group = ServiceGroup(services: [monitor], logger: logs.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await logs.wait(for: "Watching network changes")
            await group.triggerGracefulShutdown()
            // Throws if the monitor ended the group with an error; never returns if it hangs.
            try await tasks.waitForAll()
        }
    }

    /// No netlink (a sandbox without `AF_NETLINK`): one warning, then it waits quietly for
    /// shutdown instead of ending the service group.
    @Test func withoutNetlinkItWarnsOnceAndWaitsForShutdown() async throws {
        let logs = LogRecorder()
        let attempts = Mutex(0)
        let monitor = NetworkChangeMonitor(
            debounce: .milliseconds(10),
            maximumDelay: .milliseconds(10),
            clock: ContinuousClock(),
            eventLoopGroup: NIOSingletons.posixEventLoopGroup,
            logger: logs.logger,
            openSocket: { () throws(SystemCallError) -> CInt in
                attempts.withLock { $0 += 1 }
                throw SystemCallError(call: "socket(AF_NETLINK, NETLINK_ROUTE)", errnoCode: EAFNOSUPPORT)
            },
            onBurst: { _ in Issue.record("no change without a socket") }
        )
        let group = ServiceGroup(services: [monitor], logger: logs.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await logs.wait(for: "Network changes cannot be watched")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(attempts.withLock { $0 } == 1)
        let warnings = logs.entries.filter { $0.level >= .warning }
        #expect(warnings.count == 1)
        #expect(warnings.first?.message.contains("probes keep their own schedule") == true)
    }

    /// What arrives on the socket decides the changes: datagrams are parsed and debounced; a
    /// socket that fails (here: its peer closes) is a change with notifications lost, and a new
    /// socket is opened.
    @Test func aFailedSocketIsAChangeAndIsReopened() async throws {
        let first = try SocketPair()
        let second = try SocketPair()
        let sockets = Mutex([first.monitorEnd, second.monitorEnd])
        let (changes, changed) = AsyncStream.makeStream(of: NetworkChange.self)
        let logs = LogRecorder()
        let monitor = NetworkChangeMonitor(
            debounce: .milliseconds(20),
            maximumDelay: .seconds(1),
            clock: ContinuousClock(),
            eventLoopGroup: NIOSingletons.posixEventLoopGroup,
            logger: logs.logger,
            openSocket: { () throws(SystemCallError) -> CInt in
                guard let next = sockets.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                    throw SystemCallError(call: "socket", errnoCode: EMFILE)
                }
                return next
            },
            onBurst: { changed.yield($0) }
        )
        defer {
            first.closeTestEnd()
            second.closeTestEnd()
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await monitor.run() }
            var received = changes.makeAsyncIterator()

            try first.send(NetworkNetlinkMessagesTests.datagram([CInt(RTM_NEWADDR), CInt(RTM_NEWROUTE)]))
            #expect(await received.next() == NetworkChange(addresses: 1, routes: 1))

            first.closeTestEnd()
            #expect(await received.next() == NetworkChange(notificationsLost: true))

            try second.send(NetworkNetlinkMessagesTests.datagram([CInt(RTM_DELLINK)]))
            #expect(await received.next() == NetworkChange(links: 1))
            #expect(sockets.withLock { $0.isEmpty }, "the second socket was opened after the first failed")

            tasks.cancelAll()
        }
        #expect(logs.entries.contains { $0.message.contains("Netlink socket failed; reopening it") })
    }
}
