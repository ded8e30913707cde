extension DaemonConfiguration {
    /// What `errorbusctl health`, `STATUS=` and `GetStatus` call healthy delivery (`health.*`):
    /// for each measure, the level from which it is a warning and from which it is critical. A
    /// level set to nothing (`null`) is not checked.
    package struct Health: Sendable, Equatable {
        /// A measure's two levels; a value at or beyond a level reaches it.
        package struct Levels<Value: Sendable & Equatable & Comparable>: Sendable, Equatable {
            package var warning: Value?
            package var critical: Value?

            package init(warning: Value?, critical: Value?) {
                self.warning = warning
                self.critical = critical
            }
        }

        /// `health.oldest-job.*`: how long the oldest job waiting for delivery has waited.
        /// Default 15 min, 1 h.
        package var oldestJob: Levels<Duration>
        /// `health.parked.*`: how many jobs incidents hold. Default 1,000, 10,000.
        package var parked: Levels<Int>
        /// `health.dead-letters.*`: how many files wait as dead letters for an operator (those
        /// the store keeps now). Default 1, 100.
        package var deadLetters: Levels<Int>
        /// `health.needs-operator.*`: how many open incidents wait for an operator. Default 1, 1.
        package var needsOperator: Levels<Int>
        /// `health.incident-age.*`: how long the oldest open incident has been open. Default
        /// 10 min, 1 h.
        package var incidentAge: Levels<Duration>
        /// `health.free-space.*`: the free space left for the state directory (the store), at or
        /// *below* a level. Default 1 GiB, 100 MiB; each is lowered to its percentage of the file
        /// system's size (``freeSpacePercent``) when that is lower.
        package var freeSpace: Levels<Int64>
        /// `health.free-space.*-percent`: the same levels as percentages of the size of the state
        /// directory's file system. The level checked is the lower of the size and the
        /// percentage, so that a small file system (64 MiB) is not critical even when empty, and
        /// a large one keeps the sizes. `nil`: the size alone. Default 10 %, 5 %.
        package var freeSpacePercent: Levels<Int>
        /// `health.not-delivering.*`: how long work has waited while nothing was delivered (since
        /// the last delivery, the oldest waiting job's arrival or the start, whichever is latest).
        /// Default 1 min, 15 min.
        package var notDelivering: Levels<Duration>
        /// `health.refused.*`: while an incident paces uploads (their API refuses some and serves
        /// the others), the percentage of the latest uploads it refused. Default 10, 50.
        package var refused: Levels<Int>

        package init(
            oldestJob: Levels<Duration> = Levels(warning: .seconds(15 * 60), critical: .seconds(3_600)),
            parked: Levels<Int> = Levels(warning: 1_000, critical: 10_000),
            deadLetters: Levels<Int> = Levels(warning: 1, critical: 100),
            needsOperator: Levels<Int> = Levels(warning: 1, critical: 1),
            incidentAge: Levels<Duration> = Levels(warning: .seconds(10 * 60), critical: .seconds(3_600)),
            freeSpace: Levels<Int64> = Levels(warning: 1 << 30, critical: 100 << 20),
            freeSpacePercent: Levels<Int> = Levels(warning: 10, critical: 5),
            notDelivering: Levels<Duration> = Levels(warning: .seconds(60), critical: .seconds(15 * 60)),
            refused: Levels<Int> = Levels(warning: 10, critical: 50)
        ) {
            self.oldestJob = oldestJob
            self.parked = parked
            self.deadLetters = deadLetters
            self.needsOperator = needsOperator
            self.incidentAge = incidentAge
            self.freeSpace = freeSpace
            self.freeSpacePercent = freeSpacePercent
            self.notDelivering = notDelivering
            self.refused = refused
        }
    }

    /// The Prometheus scrape endpoint (`metrics.*`).
    package struct Metrics: Sendable, Equatable {
        /// `metrics.listen`: the address and port to serve `GET /metrics` on (`127.0.0.1:9464`,
        /// `[::1]:9464`, `0.0.0.0:9464`). Default none: metrics only through the control socket.
        package var listen: ListenAddress?

        package init(listen: ListenAddress? = nil) {
            self.listen = listen
        }

        /// A host (an IP address or a name) and a port; port 0 takes any free one, which the
        /// journal tells.
        package struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
            package var host: String
            package var port: Int

            package init(host: String, port: Int) {
                self.host = host
                self.port = port
            }

            /// `HOST:PORT`, `[IPV6]:PORT`; `nil` when it is neither.
            package init?(parsing text: String) {
                let host: Substring
                let portText: Substring
                if text.hasPrefix("[") {
                    guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
                    host = text[text.index(after: text.startIndex)..<close]
                    portText = text[text.index(close, offsetBy: 2)...]
                } else {
                    guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
                    host = text[..<colon]
                    portText = text[text.index(after: colon)...]
                }
                guard !host.isEmpty, !host.contains(" "), let port = Int(portText), (0...65_535).contains(port) else { return nil }
                self.init(host: String(host), port: port)
            }

            package var description: String {
                host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            }
        }
    }
}

extension DaemonConfiguration.Health {
    /// The free-space levels checked on a file system of `size` bytes: each the lower of its size
    /// and its percentage of `size`. A size set to nothing is not checked, whatever its
    /// percentage; the sizes alone when `size` is not known or no percentage is set.
    package func freeSpaceLevels(fileSystemSize size: Int64?) -> Levels<Int64> {
        func level(_ bytes: Int64?, _ percent: Int?) -> Int64? {
            guard let bytes, let size, let percent else { return bytes }
            // size × percent / 100, without overflow for any size.
            return min(bytes, size / 100 * Int64(percent) + size % 100 * Int64(percent) / 100)
        }
        return Levels(
            warning: level(freeSpace.warning, freeSpacePercent.warning),
            critical: level(freeSpace.critical, freeSpacePercent.critical)
        )
    }
}
