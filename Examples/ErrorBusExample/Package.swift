// swift-tools-version:6.2
import Foundation
import PackageDescription

// A path dependency is identified by its directory's name, which is whatever the clone is called:
// the repository's root is two levels up from this package.
let errorbus = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // Examples/ErrorBusExample
    .deletingLastPathComponent()  // Examples
    .deletingLastPathComponent()  // the repository
    .lastPathComponent

// A small daemon on the ErrorBus library: two services sharing one bus, a probe and an
// authenticator for the API, the incident reporter, one service group. `swift run
// errorbus-example` plays a short scenario; `swift test` tests the uploader on a manual clock.
let package = Package(
    name: "errorbus-example",
    platforms: [.macOS(.v15)],
    dependencies: [
        // No traits: only ErrorBus and ErrorBusTesting, so that nothing but swift-log,
        // swift-collections, swift-metrics and swift-service-lifecycle is resolved.
        .package(path: "../..", traits: []),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // The daemon: the simulated API, the uploader and refresher services, their errors, the
        // probe, the authenticator, the service group, and the scripted scenario.
        .target(
            name: "ExampleDaemon",
            dependencies: [
                .product(name: "ErrorBus", package: errorbus),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // `errorbus-example`: @main only.
        .executableTarget(
            name: "errorbus-example",
            dependencies: [
                "ExampleDaemon",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ExampleDaemonTests",
            dependencies: [
                "ExampleDaemon",
                .product(name: "ErrorBus", package: errorbus),
                .product(name: "ErrorBusTesting", package: errorbus),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)

// The same upcoming features as errorbus's own targets.
for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
    target.swiftSettings = settings
}
