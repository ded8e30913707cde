// swift-tools-version:6.2
import Foundation
import PackageDescription

// A path dependency is known by the name of its directory, which is whatever the clone of the
// repository is called. A package of your own depends on errorbus by URL and names it "errorbus":
//
//     .package(url: "https://github.com/errorbus/errorbus.git", from: "0.3.0", traits: ["HTTP"])
//     .product(name: "ErrorBusHTTP", package: "errorbus")
let errorbus = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // Examples/HTTPExample
    .deletingLastPathComponent()  // Examples
    .deletingLastPathComponent()  // the repository
    .lastPathComponent

// A small daemon that uploads reports to an HTTP API with AsyncHTTPClient through an ErrorBus:
// its failures classified by ErrorBusHTTP, the API probed by its APIProbe. `swift test` runs it
// against a scripted HTTP server on the loopback interface (ErrorBusTesting).
let package = Package(
    name: "HTTPExample",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Only the trait HTTP: errorbus's default trait builds the whole daemon and resolves
        // every package it needs. AsyncHTTPClient and SwiftNIO are resolved for ErrorBusHTTP
        // anyway; naming them lets this package import them itself.
        .package(path: "../..", traits: ["HTTP"]),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // The daemon: the API's contract, the uploader service, and their assembly with a bus,
        // its probe and its incident reporter into one service group.
        .target(
            name: "ReportUploader",
            dependencies: [
                .product(name: "ErrorBus", package: errorbus),
                .product(name: "ErrorBusHTTP", package: errorbus),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // `report-uploader API-URL TEXT...`: uploads each text as a report, then stops.
        .executableTarget(
            name: "report-uploader",
            dependencies: [
                "ReportUploader",
                .product(name: "ErrorBus", package: errorbus),
                .product(name: "ErrorBusHTTP", package: errorbus),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The uploader against a real HTTP server on 127.0.0.1 (ErrorBusTesting's
        // LoopbackHTTPServer, there with the trait HTTP), on a bus on a manual clock.
        .testTarget(
            name: "ReportUploaderTests",
            dependencies: [
                "ReportUploader",
                .product(name: "ErrorBus", package: errorbus),
                .product(name: "ErrorBusHTTP", package: errorbus),
                .product(name: "ErrorBusTesting", package: errorbus),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
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
