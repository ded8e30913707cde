package import CoreMetrics
package import Prometheus

/// The swift-metrics backend errorbusd bootstraps: swift-prometheus's registry, with each
/// family's `# HELP` text from ``MetricCatalog`` and histogram buckets that fit what they
/// measure.
///
/// swift-prometheus's own `PrometheusMetricsFactory` registers every metric with empty help
/// text, and its registry stops the process when one name is registered with two help texts:
/// so every metric, the library's counters included, is made here, through the registry's
/// calls that take help text.
package struct ErrorbusdMetricsFactory: MetricsFactory {
    package let registry: PrometheusCollectorRegistry

    package init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// The delivery delay's buckets, in seconds. A file normally goes in well under a second
    /// (the upload's latency and the outbox's settle time); through an outage it waits as long
    /// as the outage lasts, minutes to days. Below 10 s a 1-2-5 series; from 10 s to an hour,
    /// where alerts and outages lie, steps of at most ×2 (60, 90, 120, 180 s: a 74 s delay is
    /// told within 60–90 s); beyond, hours, a day, three days, a week offline.
    static let deliveryDelayBuckets: [Duration] = [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5,
        10, 20, 30, 60, 90, 120, 180, 300, 600, 900, 1_800, 3_600,
        7_200, 14_400, 28_800, 86_400, 259_200, 604_800,
    ].map { Duration.milliseconds(Int64($0 * 1_000)) }

    /// The attempts' buckets: a file is sent once unless its upload fails; an outage costs a
    /// parked file its one canary try at most, and a file that fails on its own is tried
    /// `bus.isolation.max-attempts` times (5 by default) before it is set aside: every count up to
    /// 6, then coarser.
    static let deliveryAttemptsBuckets: [Double] = [1, 2, 3, 4, 5, 6, 8, 10, 20, 50, 100]

    /// swift-prometheus's buckets, for any other histogram.
    private static let defaults = PrometheusMetricsFactory()

    private func help(_ name: String) -> String {
        MetricCatalog.help[name] ?? ""
    }

    package func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(name: label, labels: dimensions, help: help(label))
    }

    package func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(name: label, labels: dimensions, help: help(label))
    }

    package func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(name: label, labels: dimensions, help: help(label)) }
        let buckets = label == SyncService.deliveryAttemptsMetric ? Self.deliveryAttemptsBuckets : Self.defaults.defaultValueHistogramBuckets
        return registry.makeValueHistogram(name: label, labels: dimensions, buckets: buckets, help: help(label))
    }

    package func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(name: label, labels: dimensions, help: help(label))
    }

    package func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let buckets = label == SyncService.deliveryDelayMetric ? Self.deliveryDelayBuckets : Self.defaults.defaultDurationHistogramBuckets
        return registry.makeDurationHistogram(name: label, labels: dimensions, buckets: buckets, help: help(label))
    }

    package func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    package func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    package func destroyRecorder(_ handler: any RecorderHandler) {
        switch handler {
        case let gauge as Prometheus.Gauge: registry.unregisterGauge(gauge)
        case let histogram as ValueHistogram: registry.unregisterValueHistogram(histogram)
        default: break
        }
    }

    package func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    package func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
