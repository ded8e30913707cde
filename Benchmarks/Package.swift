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
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
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
        ),
        // The plain AsyncHTTPClient PUT loop errorbusd's sync throughput is compared with
        // (scripts/bench-daemon): the same requests, with nothing durable and no bus.
        .executableTarget(
            name: "sync-baseline",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            path: "SyncBaseline"
        ),
    ]
)
