import Foundation
import Metrics
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The standard `process_*` metrics of a Prometheus client, read from `/proc/self` when
/// metrics are asked for: CPU time, resident and virtual memory, start time, open and maximum
/// file descriptors.
///
/// (swift-system-metrics, the ecosystem's collector of these, is not among the packages this
/// project can resolve; what it reads is a few lines of `/proc`.)
final class ProcessMetrics: Sendable {
    /// The CPU seconds counted so far: the counter rises by what `/proc` adds.
    private let countedCPU = Mutex<Double>(0)
    private let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
    private let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))

    func update() {
        if let stat = Self.stat() {
            let cpu = (stat.userTicks + stat.systemTicks) / ticksPerSecond
            let added = countedCPU.withLock { counted -> Double in
                defer { counted = max(counted, cpu) }
                return max(0, cpu - counted)
            }
            FloatingPointCounter(label: "process_cpu_seconds_total").increment(by: added)
            Gauge(label: "process_resident_memory_bytes").record(stat.residentPages * pageSize)
            Gauge(label: "process_virtual_memory_bytes").record(stat.virtualBytes)
            if let boot = Self.bootTime() {
                Gauge(label: "process_start_time_seconds").record(boot + stat.startTicks / ticksPerSecond)
            }
        }
        if let open = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            // The directory's own descriptor, open while it is read, is not counted.
            Gauge(label: "process_open_fds").record(max(0, open.count - 1))
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            Gauge(label: "process_max_fds").record(Double(limit.rlim_cur))
        }
    }

    struct Stat {
        var userTicks: Double
        var systemTicks: Double
        var startTicks: Double
        var virtualBytes: Double
        var residentPages: Double
    }

    /// `/proc/self/stat`'s fields 14, 15, 22, 23 and 24 (proc(5)); the command name, field 2,
    /// may hold spaces and parentheses, so fields are counted from its closing parenthesis.
    static func stat(_ text: String? = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)) -> Stat? {
        guard let text, let close = text.lastIndex(of: ")") else { return nil }
        // Field 3 onwards.
        let fields = text[text.index(after: close)...].split(separator: " ")
        func field(_ number: Int) -> Double? {
            let index = number - 3
            return fields.indices.contains(index) ? Double(fields[index]) : nil
        }
        guard let user = field(14), let system = field(15), let start = field(22), let virtual = field(23), let resident = field(24) else { return nil }
        return Stat(userTicks: user, systemTicks: system, startTicks: start, virtualBytes: virtual, residentPages: resident)
    }

    /// When the host booted, in seconds since the epoch (`btime` of `/proc/stat`).
    static func bootTime() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst("btime ".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
