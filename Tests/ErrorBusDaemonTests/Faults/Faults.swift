import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Glibc
import TestSupport
import Testing

/// The fault and abuse suite: the real `errorbusd` and the real sandbox as processes, killed,
/// starved of disk, fed hostile answers and abused on the control socket. One suite at a time
/// (each starts its own daemons), every wait for something a process says.
@Suite("Faults: errorbusd under crashes, full disks, hostile peers", .serialized)
enum Faults {
    /// A seeded generator (SplitMix64), so that a failing run can be repeated with its seed.
    struct SeededGenerator: RandomNumberGenerator {
        private var state: UInt64

        init(seed: UInt64) { state = seed }

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// `$ERRORBUS_FAULT_SEED`, or a fresh seed; printed either way.
    static func seed(for test: String) -> UInt64 {
        let seed = ProcessInfo.processInfo.environment["ERRORBUS_FAULT_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        print("\(test): seed \(seed) (ERRORBUS_FAULT_SEED=\(seed) repeats it)")
        return seed
    }

    /// A process's resident memory from `/proc/PID/status`: now (`VmRSS`) and its peak (`VmHWM`),
    /// in bytes.
    struct Memory {
        var resident: Int
        var peak: Int

        init(of pid: pid_t) throws {
            let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            func kibibytes(_ field: String) throws -> Int {
                guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
                      let value = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
                else { throw ChildProcessError(description: "no \(field) in /proc/\(pid)/status") }
                return value * 1024
            }
            resident = try kibibytes("VmRSS")
            peak = try kibibytes("VmHWM")
        }
    }

    /// How a fault test ends: errorbusd stopped with status 0, its database intact, and all
    /// `count` jobs in it delivered.
    static func expectCleanStop(
        _ daemon: DaemonProcess,
        stateDirectory: String? = nil,
        delivered count: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let stopped = try await daemon.stop()
        #expect(stopped.status == 0, "\(stopped.standardError)", sourceLocation: sourceLocation)
        let database = try StateDatabase(directory: stateDirectory ?? daemon.stateDirectory)
        #expect(try database.integrityCheck() == ["ok"], sourceLocation: sourceLocation)
        #expect(try database.counts() == [JobState.delivered.rawValue: count], sourceLocation: sourceLocation)
    }

    /// What a well-behaved control client must get at any moment: `GetStatus` answered.
    static func statusAnswers(_ daemon: DaemonProcess, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let client = try RawVarlink(daemon.controlSocket)
        let reply = try await client.call(#"{"method":"io.errorbus.Control.GetStatus"}"#)
        let parameters = reply?["parameters"] as? [String: Any]
        #expect(parameters?["services"] != nil, "GetStatus was not answered: \(String(describing: reply?.object))", sourceLocation: sourceLocation)
        return parameters ?? [:]
    }
}
