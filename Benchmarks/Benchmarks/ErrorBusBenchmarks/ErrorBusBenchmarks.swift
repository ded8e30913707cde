import Benchmark
import ErrorBus
import Foundation
import Logging

// What the core promises, measured: failures joining an open incident through `report`, failing
// operations parked, and the memory a parked job costs.

/// An outage seen by every job: the proxy they all go through refuses connections. Its scope is
/// the proxy, not the jobs' API host, so jobs are not held back at admission: each one really
/// runs, fails, and joins the open incident.
struct ProxyRefused: CategorizedError {
    var category: ErrorCategory { .unreachable }
    var cause: String { "connectionRefused" }
    var scope: String? { "proxy.example.net" }
    var operatorText: OperatorText {
        OperatorText(title: "Proxy unreachable", message: "proxy.example.net refused the connection.")
    }
}

/// What a service captures in its operation: its own state and the job's record.
final class OutboxItem: Sendable {
    let id: String
    init(id: String) { self.id = id }
}

func makeBus() -> ErrorBus {
    var configuration = ErrorBusConfiguration()
    configuration.maxParkedJobs = .max
    // ERRORBUS_BENCH_ATTEMPT_TIMEOUT=off: runs without their deadline (a task group each), to
    // compare its cost side by side.
    if ProcessInfo.processInfo.environment["ERRORBUS_BENCH_ATTEMPT_TIMEOUT"] == "off" {
        configuration.attemptTimeout = nil
    }
    return ErrorBus(configuration: configuration, logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
}

let failure = Failure(
    category: .unreachable,
    scope: "api.example.net",
    cause: "connectionRefused",
    service: "sync",
    text: OperatorText(title: "API unreachable", message: "api.example.net refused the connection.")
)

func job(_ number: Int) -> Job {
    Job(id: "item-\(number)", service: "sync", scope: "api.example.net", realm: "api")
}

/// Resident memory of this process, from /proc/self/statm.
func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

enum Metrics {
    static let residentBytesPerParkedJob = BenchmarkMetric.custom("resident bytes per parked job", useScalingFactor: false)
    /// Calls per second, measured around the calls themselves (thousands, to keep digits).
    static let thousandsPerSecond = BenchmarkMetric.custom("calls per second (thousands)", polarity: .prefersLarger, useScalingFactor: false)
}

/// Times `calls` calls made by `body` and records their rate.
func measureRate(_ benchmark: Benchmark, calls: Int, _ body: () async -> Void) async {
    let clock = ContinuousClock()
    benchmark.startMeasurement()
    let elapsed = await clock.measure { await body() }
    benchmark.stopMeasurement()
    benchmark.measurement(Metrics.thousandsPerSecond, Int(Double(calls) / elapsed.seconds / 1_000))
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [Metrics.thousandsPerSecond, .wallClock, .mallocCountTotal],
        timeUnits: .milliseconds,
        maxDuration: .seconds(10),
        maxIterations: 20
    )

    for producers in [1, 8] {
        Benchmark(
            "report: failures joining an open incident, \(producers) producer\(producers == 1 ? "" : "s")",
            configuration: .init(scalingFactor: .mega)
        ) { benchmark in
            let bus = makeBus()
            await bus.report(failure)
            let perProducer = benchmark.scaledIterations.count / producers
            await measureRate(benchmark, calls: perProducer * producers) {
                await withDiscardingTaskGroup { group in
                    for _ in 0..<producers {
                        group.addTask {
                            for _ in 0..<perProducer { await bus.report(failure) }
                        }
                    }
                }
            }
            let snapshot = await bus.snapshot()
            precondition(snapshot.incidents.first?.failures == perProducer * producers + 1)
        }
    }

    for producers in [1, 8] {
        Benchmark(
            "submit: failing operations parked, \(producers) producer\(producers == 1 ? "" : "s")",
            configuration: .init(scalingFactor: .mega)
        ) { benchmark in
            let bus = makeBus()
            let perProducer = benchmark.scaledIterations.count / producers
            await measureRate(benchmark, calls: perProducer * producers) {
                await withDiscardingTaskGroup { group in
                    for producer in 0..<producers {
                        group.addTask {
                            for number in 0..<perProducer {
                                let item = OutboxItem(id: "item-\(number)")
                                _ = await bus.submit(job(producer * perProducer + number)) {
                                    _ = item
                                    throw ProxyRefused()
                                } completion: { _ in
                                    _ = item
                                }
                            }
                        }
                    }
                }
            }
            let snapshot = await bus.snapshot()
            precondition(snapshot.parkedJobs == perProducer * producers)
            precondition(snapshot.incidents.first?.failures == perProducer * producers)
        }
    }

    Benchmark(
        "submit: jobs of a held scope parked without running",
        configuration: .init(scalingFactor: .mega)
    ) { benchmark in
        let bus = makeBus()
        await bus.report(failure)
        let iterations = benchmark.scaledIterations
        await measureRate(benchmark, calls: iterations.count) {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for number in iterations {
                        let item = OutboxItem(id: "item-\(number)")
                        _ = await bus.submit(job(number)) { _ = item } completion: { _ in _ = item }
                    }
                }
            }
        }
        let snapshot = await bus.snapshot()
        precondition(snapshot.parkedJobs == benchmark.scaledIterations.count)
    }

    Benchmark(
        "perform: failing calls parked, one waiting task each",
        configuration: .init(scalingFactor: .kilo, maxIterations: 10)
    ) { benchmark in
        let bus = makeBus()
        let calls = benchmark.scaledIterations.count * 100
        let parked = AsyncStream<Void>.makeStream()
        await bus.connect(ClosureResponder { _, _ in parked.continuation.yield(); return .pass }, to: "sync")
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        await withDiscardingTaskGroup { group in
            for number in 0..<calls {
                group.addTask {
                    _ = try? await bus.perform(job(number)) { () async throws -> Void in throw ProxyRefused() }
                }
            }
            var seen = 0
            for await _ in parked.stream {
                seen += 1
                if seen == calls { break }
            }
            let elapsed = start.duration(to: clock.now)
            benchmark.stopMeasurement()
            benchmark.measurement(Metrics.thousandsPerSecond, Int(Double(calls) / elapsed.seconds / 1_000))
            group.cancelAll()
        }
    }

    Benchmark(
        "memory: 100,000 parked jobs",
        configuration: .init(
            metrics: [.peakMemoryResidentDelta, .mallocCountTotal, .mallocBytesCount, Metrics.residentBytesPerParkedJob],
            maxIterations: 5
        )
    ) { benchmark in
        let jobs = 100_000
        let bus = makeBus()
        await bus.report(failure)
        let before = residentBytes()
        for number in 0..<jobs {
            let item = OutboxItem(id: "item-\(number)")
            _ = await bus.submit(job(number)) { _ = item } completion: { _ in _ = item }
        }
        benchmark.measurement(Metrics.residentBytesPerParkedJob, (residentBytes() - before) / jobs)
        let snapshot = await bus.snapshot()
        precondition(snapshot.parkedJobs == jobs)
    }
}
