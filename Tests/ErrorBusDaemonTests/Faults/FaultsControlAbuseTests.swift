import Dispatch
import ErrorBusControl
import Foundation
import Glibc
@testable import Sandbox
import TestSupport
import Testing
import Varlink

extension Faults {
    /// Clients that misbehave on the control socket: random bytes, ten thousand malformed
    /// messages, a 16 MiB message, a thousand idle connections, a watcher that never reads while
    /// the API rejects a thousand files (an event each). errorbusd stays up, its memory stays
    /// bounded, and a well-behaved client's `GetStatus` is answered between and during them.
    @Suite(.timeLimit(.minutes(2)))
    struct ControlAbuse {
        static let idleConnections = 1_000
        static let memoryLimit = 200 << 20

        /// Reads NUL-terminated messages until the peer closes or `limit` have come.
        static func messages(from descriptor: CInt, limit: Int) -> [String] {
            var messages: [String] = []
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while messages.count < limit {
                let count = read(descriptor, &buffer, buffer.count)
                guard count > 0 else { break }
                pending.append(contentsOf: buffer[..<count])
                while let end = pending.firstIndex(of: 0) {
                    messages.append(String(decoding: pending[..<end], as: UTF8.self))
                    pending.removeFirst(end + 1)
                }
            }
            return messages
        }

        /// The soft limit on open files of a process, from `/proc/PID/limits`.
        static func openFileLimit(of pid: String) throws -> Int {
            let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
            let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
            return try #require(line.dropFirst("Max open files".count).split(separator: " ").first.flatMap { Int($0) })
        }

        static let malformed = [
            "{not json", #"["a"]"#, #"{"parameters":{}}"#, #"{"method":42}"#, "\u{FF}", "", "null",
            #"{"method":"io.errorbus.Control.GetStatus","parameters":[]}"#,
            #"{"method":"io.errorbus.Control.Retry","parameters":{"incident":"one"}}"#,
            #"{"method":"no.such.Interface.Method"}"#,
        ]

        @Test func misbehavingClientsNeitherStopNorBloatErrorbusdNorDelayOthers() async throws {
            var generator = SeededGenerator(seed: Faults.seed(for: "control-socket abuse"))
            let environment = ["ERRORBUSD_CONTROL_MAX_CONNECTIONS": "\(Self.idleConnections + 100)"]
            try await DaemonIntegrationTests.withDaemon(environment: environment) { sandbox, daemon in
                let pid = try daemon.current.processIdentifier
                #expect(try Self.openFileLimit(of: "\(pid)") > Self.idleConnections + 100, "raise ulimit -n")
                let socketPath = daemon.controlSocket
                _ = try await Faults.statusAnswers(daemon)

                // Random bytes, NULs included, on fifty connections.
                let noise = (0..<50).map { _ in (0..<65_536).map { _ in UInt8.random(in: 0...255, using: &generator) } }
                try await RawVarlink.blocking {
                    for bytes in noise {
                        let socket = try TestSocket.stream(connectedTo: socketPath)
                        RawVarlink.write(bytes, to: socket.descriptor)
                        _ = Self.messages(from: socket.descriptor, limit: Int.max)
                    }
                }
                _ = try await Faults.statusAnswers(daemon)

                // 10,000 malformed messages: ten at a time on a thousand connections. Each that
                // is answered is answered with an error; a message that is not Varlink at all
                // closes its connection.
                let replies = try await RawVarlink.blocking {
                    var replies: [String] = []
                    for connection in 0..<1_000 {
                        let socket = try TestSocket.stream(connectedTo: socketPath)
                        let batch = (0..<10).map { Self.malformed[(connection + $0) % Self.malformed.count] }
                        RawVarlink.write(batch.flatMap { Array($0.utf8) + [0] }, to: socket.descriptor)
                        replies += Self.messages(from: socket.descriptor, limit: 10)
                    }
                    return replies
                }
                #expect(replies.count >= 1_000)
                #expect(replies.allSatisfy { $0.contains(#""error":"#) }, "\(replies.first { !$0.contains(#""error":"#) } ?? "")")
                _ = try await Faults.statusAnswers(daemon)

                // One 16 MiB message: refused once it passes 1 MiB, its connection closed.
                let huge = Array(#"{"method":"io.errorbus.Control.GetStatus","parameters":{"x":""#.utf8) + [UInt8](repeating: 0x61, count: 16 << 20) + Array(#""}}"#.utf8) + [0]
                let hugeReplies = try await RawVarlink.blocking {
                    let socket = try TestSocket.stream(connectedTo: socketPath)
                    RawVarlink.write(huge, to: socket.descriptor)
                    return Self.messages(from: socket.descriptor, limit: Int.max)
                }
                #expect(hugeReplies.count == 1)
                #expect(hugeReplies.first?.contains("io.errorbus.varlink.MessageTooLarge") == true)
                _ = try await Faults.statusAnswers(daemon)

                // A thousand connections that say nothing. Each is admitted: the last one opened
                // is answered when it does speak.
                let idle = try await RawVarlink.blocking {
                    try (0..<Self.idleConnections).map { _ in try TestSocket.stream(connectedTo: socketPath) }
                }
                _ = try await Faults.statusAnswers(daemon)
                let last = try #require(idle.last)
                let lastReply = try await RawVarlink.blocking {
                    RawVarlink.write(Array(#"{"method":"io.errorbus.Control.GetStatus"}"#.utf8) + [0], to: last.descriptor)
                    return Self.messages(from: last.descriptor, limit: 1)
                }
                #expect(lastReply.first?.contains(#""services":"#) == true, "\(lastReply)")
                let withIdle = try Memory(of: pid)
                #expect(withIdle.resident < Self.memoryLimit, "\(withIdle.resident) bytes resident with \(Self.idleConnections) idle connections")

                // A watcher that never reads, while the API rejects a thousand files (an event
                // each: dead-lettered). GetStatus is answered while they come.
                let watcher = try TestSocket.stream(connectedTo: socketPath)
                #expect(RawVarlink.write(Array(#"{"method":"io.errorbus.Control.Watch","more":true}"#.utf8) + [0], to: watcher.descriptor))
                try await sandbox.fault(#"{"route":"items","mode":"invalid","detail":"rejected to flood the watchers"}"#)
                let files = 1_000
                for number in 0..<files { try daemon.drop("item-\(number).bin", content: DaemonIntegrationTests.content(number)) }
                for step in stride(from: 100, through: files, by: 100) {
                    try await daemon.waitForLog("set aside as a dead letter: ", count: step)
                    _ = try await Faults.statusAnswers(daemon)
                }
                try await sandbox.clearFaults()
                let retried = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.retry, .init(deadLetters: true)) }
                #expect(retried.count == files)
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                _ = try await Faults.statusAnswers(daemon)
                #expect(try await sandbox.stats().items.distinct == files)
                // The watcher really fell behind: what waits unread in its socket is far more
                // than a handful of events (an outage's few lifecycle events are about 10 KiB;
                // runs leave 85 to 160 KiB here).
                var unread = 0
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = recv(watcher.descriptor, &buffer, buffer.count, CInt(MSG_DONTWAIT))
                    guard count > 0 else { break }
                    unread += count
                }
                print("control-socket abuse: \(unread) bytes of Watch events were waiting unread")
                #expect(unread > 32 << 10)
                withExtendedLifetime(idle) {}

                let memory = try Memory(of: pid)
                print("control-socket abuse: errorbusd peak resident \(memory.peak >> 20) MiB")
                #expect(memory.peak < Self.memoryLimit)
            }
        }
    }
}
