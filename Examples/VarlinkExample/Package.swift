// swift-tools-version:6.2
import Foundation
import PackageDescription

// A path dependency is known by the name of its directory, which is whatever the clone of the
// repository is called. A package of your own depends on errorbus by URL and names it "errorbus":
//
//     .package(url: "https://github.com/errorbus/errorbus.git", from: "0.3.0", traits: ["Varlink"])
//     .product(name: "Varlink", package: "errorbus")
let errorbus = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // Examples/VarlinkExample
    .deletingLastPathComponent()  // Examples
    .deletingLastPathComponent()  // the repository
    .lastPathComponent

let package = Package(
    name: "VarlinkExample",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Only the trait Varlink: errorbus's default trait builds the whole daemon and resolves
        // every package it needs.
        .package(path: "../..", traits: ["Varlink"]),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // org.example.notes: the declarations both ends share.
        .target(
            name: "NotesInterface",
            dependencies: [.product(name: "Varlink", package: errorbus)]
        ),
        // The notes and the handlers of the interface's methods.
        .target(
            name: "NotesService",
            dependencies: [
                "NotesInterface",
                .product(name: "Varlink", package: errorbus),
            ]
        ),
        // `notesd SOCKET`: serves org.example.notes until SIGTERM or SIGINT.
        .executableTarget(
            name: "notesd",
            dependencies: [
                "NotesService",
                .product(name: "Varlink", package: errorbus),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // `notesctl SOCKET add TEXT | get ID | watch`: calls it.
        .executableTarget(
            name: "notesctl",
            dependencies: [
                "NotesInterface",
                .product(name: "Varlink", package: errorbus),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NotesServiceTests",
            dependencies: [
                "NotesInterface",
                "NotesService",
                .product(name: "Varlink", package: errorbus),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
