/// What one burst of network changes consisted of, as the kernel reported it.
package struct NetworkChange: Sendable, Hashable, CustomStringConvertible {
    /// Links added, removed, or going up or down (`RTM_NEWLINK`, `RTM_DELLINK`).
    package var links = 0
    /// IPv4 and IPv6 addresses added or removed (`RTM_NEWADDR`, `RTM_DELADDR`).
    package var addresses = 0
    /// IPv4 and IPv6 routes added or removed (`RTM_NEWROUTE`, `RTM_DELROUTE`).
    package var routes = 0
    /// Other notifications on the subscribed groups.
    package var other = 0
    /// The kernel dropped notifications because they came faster than they were read
    /// (`ENOBUFS`): something changed, but not everything was counted.
    package var notificationsLost = false

    package init(links: Int = 0, addresses: Int = 0, routes: Int = 0, other: Int = 0, notificationsLost: Bool = false) {
        self.links = links
        self.addresses = addresses
        self.routes = routes
        self.other = other
        self.notificationsLost = notificationsLost
    }

    /// Every notification counted.
    package var notifications: Int { links + addresses + routes + other }

    /// Adds another change's counts to this one.
    package mutating func merge(_ other: NetworkChange) {
        links += other.links
        addresses += other.addresses
        routes += other.routes
        self.other += other.other
        notificationsLost = notificationsLost || other.notificationsLost
    }

    package var description: String {
        "\(links) link, \(addresses) address, \(routes) route, \(other) other notifications" + (notificationsLost ? " (some lost)" : "")
    }
}
