// swift-tools-version:6.3
import Foundation
import PackageDescription

// A path dependency is identified by its directory's name, whatever the clone is called.
let errorbus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

// Benchmarks live in their own package so that neither CI nor the packages depending on
// ErrorBus build package-benchmark. Run them with `scripts/bench-core`.
let package = Package(
    name: "errorbus-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "ErrorBusBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ErrorBus", package: errorbus),
            ],
            path: "Benchmarks/ErrorBusBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
