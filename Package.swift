// swift-tools-version:6.2
import PackageDescription

/// Release builds of the programs link with lld and pack their relative relocations (DT_RELR,
/// glibc 2.36 and later). A position-independent Swift program has one relocation per pointer in
/// its data, 3 MiB of them for errorbusd with the runtime linked in; the loader reads them all at
/// every start, and they stayed resident. Packed: errorbusd idles in 5.5 MiB less resident
/// memory linked as scripts/install links it (Swift runtime static), 1.2 MiB less otherwise.
///
/// They also export no symbols: swiftc links executables with `-export-dynamic`, which put every
/// public symbol of the packages linked in (12,000 in errorbusctl, NIO's above all) into the
/// dynamic symbol table, 1.2 MB of errorbusctl's 20 MB and 4.7 MB of errorbusd's 83 MB once
/// stripped. Nothing loads either program as a library.
///
/// And, as Debian builds programs, their relocations are all resolved at start (`-z now`; with
/// lld's default RELRO the tables are then read-only: lintian's hardening-no-bindnow).
let compactRelocations: [LinkerSetting] = [
    .unsafeFlags(
        [
            "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic",
            "-Xlinker", "-z", "-Xlinker", "now",
        ],
        .when(platforms: [.linux], configuration: .release)
    )
]

let package = Package(
    name: "errorbus",
    // errorbusd and every module but ErrorBus and ErrorBusTesting are Linux only (Glibc, inotify,
    // netlink, SO_PEERCRED, libsystemd), which SwiftPM cannot declare. ErrorBus and
    // ErrorBusTesting have no platform code; this sets their minimum elsewhere (Synchronization).
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ErrorBus", targets: ["ErrorBus"]),
        .library(name: "ErrorBusTesting", targets: ["ErrorBusTesting"]),
        .library(name: "ErrorBusHTTP", targets: ["ErrorBusHTTP"]),
        .library(name: "Varlink", targets: ["Varlink"]),
        .executable(name: "errorbusd", targets: ["errorbusd"]),
        .executable(name: "errorbus-sandbox", targets: ["errorbus-sandbox"]),
        .executable(name: "errorbusctl", targets: ["errorbusctl"]),
    ],
    traits: [
        .trait(
            name: "HTTP",
            description: "The ErrorBusHTTP library: AsyncHTTPClient's failures as the bus's categories."
        ),
        .trait(
            name: "Varlink",
            description: "The Varlink library: a Varlink server and client on SwiftNIO."
        ),
        .trait(
            name: "Daemon",
            description: "errorbusd, errorbusctl, the sandbox API and the tests: everything in this repository.",
            enabledTraits: ["HTTP", "Varlink"]
        ),
        .default(enabledTraits: ["Daemon"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // RFC 8941 Structured Field Values, for the IETF RateLimit fields.
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // No traits: errorbusd parses its YAML file itself (ConfigurationFileOutline) and hands
        // the values to the reader in memory, so neither file snapshot is needed.
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: []),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // The configuration file's parser: the daemon walks the tree itself to reject unknown keys
        // with the line they are on.
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // `swift package generate-documentation`: ErrorBus's and Varlink's DocC catalogs. A
        // plugin no target uses, so packages depending on errorbus do not resolve it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        // MARK: The bus

        // Categories, failures, incidents, policies, the bus actor and its events, the bus as a
        // service and its incident log lines and counters. No I/O.
        .target(
            name: "ErrorBus",
            dependencies: [
                "ErrorBusUnits",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // How durations and byte counts are written, in operators' words, in columns and as the
        // configuration reads them, and how a duration is read (the configuration, errorbusctl's
        // --timeout): for the bus, errorbusd, errorbusctl and the reference. No dependencies, no
        // platform code.
        .target(name: "ErrorBusUnits"),
        // A manual clock, a bus run for a test, its events, scripted probes and authenticators;
        // with the trait HTTP, a scripted HTTP server on the loopback interface (SwiftNIO).
        .target(
            name: "ErrorBusTesting",
            dependencies: [
                "ErrorBus",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ErrorBusTests",
            dependencies: [
                "ErrorBus",
                "ErrorBusTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ]
        ),

        // MARK: The daemon
        //
        // Layers, each importing only those above it: ErrorBusSupport; ErrorBusStore and
        // ErrorBusHTTP (which know nothing of each other); ErrorBusDaemon; errorbusd.

        // What every layer of errorbusd uses: system calls that throw errno errors naming the
        // call and path.
        .target(
            name: "ErrorBusSupport"
        ),
        // The durable store (SQLite through GRDB): outbox jobs, the incident history, resource
        // entity tags; batched delivery commits, crash-safe claims, disk-full classification.
        .target(
            name: "ErrorBusStore",
            dependencies: [
                "ErrorBus",
                "ErrorBusSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // HTTP failures as the bus's categories: the one classification table of status codes,
        // transport errors and answer bodies (problem details, OAuth errors, portals, garbage),
        // Retry-After and challenges, bounded body reads, and the API's reachability probe.
        .target(
            name: "ErrorBusHTTP",
            dependencies: [
                "ErrorBus",
                "ErrorBusUnits",
                "ErrorBusSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ]
        ),
        // errorbusd's services (sync, loader, auth), its configuration, the control service,
        // the network-change monitor, the service manager, and their assembly into a service
        // group.
        .target(
            name: "ErrorBusDaemon",
            dependencies: [
                "ErrorBus",
                "ErrorBusUnits",
                "ErrorBusSupport",
                "ErrorBusStore",
                "ErrorBusHTTP",
                "CFileIO",
                "CNetlink",
                "Systemd",
                "Varlink",
                "ErrorBusControl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The Linux netlink ABI (kernel UAPI headers), for the network-change monitor.
        .systemLibrary(name: "CNetlink"),
        // openat2(2) and preadv2(2) that answer from the kernel's caches or not at all, for
        // reading outbox files without a hop to the blocking-I/O pool.
        .systemLibrary(name: "CFileIO"),
        // `errorbusd`: @main only.
        .executableTarget(
            name: "errorbusd",
            dependencies: [
                "ErrorBusDaemon",
                "ErrorBusStore",
                "ErrorBusControl",
                "Systemd",
                "Varlink",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: compactRelocations
        ),
        // io.errorbus.Control: the control interface's types, methods and errors, shared by
        // errorbusd (which serves it) and errorbusctl (which calls it).
        .target(
            name: "ErrorBusControl",
            dependencies: ["Varlink", "CBuildVersion"]
        ),
        // The build's version, when scripts/install names one (Sources/CBuildVersion/shim.h).
        .systemLibrary(name: "CBuildVersion"),
        // `errorbusctl`: the control CLI, a Varlink client of io.errorbus.Control.
        .executableTarget(
            name: "errorbusctl",
            dependencies: [
                "Varlink",
                "ErrorBusUnits",
                "ErrorBusControl",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: compactRelocations
        ),
        // A small program the network tests run inside a network namespace of their own.
        .executableTarget(
            name: "network-test-helper",
            dependencies: [
                "ErrorBusDaemon",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Tests/network-test-helper"
        ),
        // A small program the store tests run as a real child process and kill with SIGKILL, and
        // the store's measurements (`store-test-helper bench`).
        .executableTarget(
            name: "store-test-helper",
            dependencies: [
                "ErrorBusStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/store-test-helper"
        ),
        .testTarget(
            name: "ErrorBusDaemonTests",
            dependencies: [
                "ErrorBusDaemon",
                "ErrorBusUnits",
                "ErrorBusStore",
                "ErrorBusHTTP",
                "ErrorBusSupport",
                "Systemd",
                "ErrorBus",
                "ErrorBusTesting",
                "Sandbox",
                "TestSupport",
                "errorbusd",
                "errorbusctl",
                "errorbus-sandbox",
                "network-test-helper",
                "Varlink",
                "ErrorBusControl",
                "store-test-helper",
                "CNetlink",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // Child processes for tests that run the real binaries: spawned with posix_spawn, their
        // output collected as it arrives, awaited without sleeping.
        .target(name: "TestSupport", path: "Tests/TestSupport"),

        // MARK: systemd

        // libsystemd, as the C module the Systemd target wraps.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // sd_notify, socket activation and a journal LogHandler. Knows nothing about errorbus.
        .target(
            name: "Systemd",
            dependencies: [
                "CSystemd",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A small program the Systemd tests run as a real child process (socket activation,
        // sd_notify from the environment, the journal outage in a private mount namespace).
        .executableTarget(
            name: "systemd-test-helper",
            dependencies: [
                "Systemd",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/systemd-test-helper"
        ),
        .testTarget(
            name: "SystemdTests",
            dependencies: [
                "Systemd",
                "systemd-test-helper",
                "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Varlink

        // The Varlink protocol (https://varlink.org): interface definitions, a server and a client
        // on SwiftNIO for Unix domain sockets. Knows nothing else of errorbus.
        .target(
            name: "Varlink",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "VarlinkTests",
            dependencies: [
                "Varlink",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            exclude: ["Resources"]
        ),

        // MARK: The sandbox API

        // The fault-injecting API server the daemon's tests and benchmarks talk to.
        .target(
            name: "Sandbox",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `errorbus-fleet-sim`: a fleet of hosts on a virtual clock driving ErrorBus's policy
        // state machines (package access) against a modelled API; scripts/bench-fleet runs it.
        .executableTarget(
            name: "errorbus-fleet-sim",
            dependencies: [
                "ErrorBus",
                "ErrorBusTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // `errorbus-sandbox`: @main only.
        .executableTarget(
            name: "errorbus-sandbox",
            dependencies: [
                "Sandbox",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "SandboxTests",
            dependencies: [
                "Sandbox",
                "errorbus-sandbox",
                "ErrorBusTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)

// Every package but those ErrorBus and ErrorBusTesting need is behind a trait, so that a package
// depending on errorbus with `traits: []` resolves and clones only swift-log, swift-collections,
// swift-metrics and swift-service-lifecycle (and theirs), and is bound by no other version
// range. Varlink needs the trait `Varlink` (SwiftNIO), ErrorBusHTTP the trait `HTTP`
// (AsyncHTTPClient), and so does ErrorBusTesting's loopback HTTP server (SwiftNIO; its source is
// under `#if HTTP`); everything else is the daemon's (`Daemon`, on by default).
let libraryPackages: Set = ["swift-log", "swift-collections", "swift-metrics", "swift-service-lifecycle"]
let traitOfTarget = ["Varlink": "Varlink", "ErrorBusHTTP": "HTTP", "ErrorBusTesting": "HTTP"]
for target in package.targets {
    let trait = traitOfTarget[target.name] ?? "Daemon"
    target.dependencies = target.dependencies.map { dependency in
        guard case .productItem(let name, let package?, let moduleAliases, nil) = dependency,
              !libraryPackages.contains(package)
        else { return dependency }
        return .productItem(name: name, package: package, moduleAliases: moduleAliases, condition: .when(traits: [trait]))
    }
}

for target in package.targets where [.executable, .test, .regular].contains(target.type) {
    var settings = target.swiftSettings ?? []
    // https://github.com/apple/swift-evolution/blob/main/proposals/0335-existential-any.md
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    // https://github.com/swiftlang/swift-evolution/blob/main/proposals/0444-member-import-visibility.md
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    // https://github.com/swiftlang/swift-evolution/blob/main/proposals/0409-access-level-on-imports.md
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    // https://github.com/swiftlang/swift-evolution/blob/main/proposals/0461-async-function-isolation.md
    settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
    target.swiftSettings = settings
}
