import Synchronization

/// Counts a server's open connections, in all and per peer user, against its limits
/// (``VarlinkServer/Configuration``).
///
/// Peers the configuration calls privileged (``VarlinkServer/Configuration/isPrivileged``) are
/// limited only by the total. Every other peer is limited per user, and all of them together to
/// the total less ``VarlinkServer/Configuration/reservedConnections``: one local user cannot
/// hold every connection and lock out the operators.
final class ConnectionLimits: Sendable {
    private struct State {
        var total = 0
        var unprivileged = 0
        var perUser: [UInt32: Int] = [:]
    }

    let maximum: Int
    let maximumPerUser: Int
    let reserved: Int
    private let state = Mutex(State())

    init(maximum: Int, maximumPerUser: Int, reserved: Int) {
        self.maximum = maximum
        self.maximumPerUser = maximumPerUser
        self.reserved = min(reserved, maximum)
    }

    /// A connection counted against the limits; ``ConnectionLimits/release(_:)`` uncounts it.
    struct Admission: Sendable {
        let uid: UInt32
        let privileged: Bool
    }

    /// Why a connection was refused: the limit it would exceed.
    enum Refusal: Error, Equatable {
        case total(Int)
        case perUser(Int)

        var limit: Int {
            switch self {
            case .total(let limit), .perUser(let limit): limit
            }
        }
    }

    /// Counts a connection of `peer`, or says which limit it would exceed. `isPrivileged` is
    /// asked only when the peer would otherwise be refused (it may look up the user database).
    func admit(_ peer: VarlinkPeerCredentials, isPrivileged: (VarlinkPeerCredentials) -> Bool) -> Result<Admission, Refusal> {
        let unprivilegedAdmission = state.withLock { state -> Result<Admission, Refusal> in
            guard state.total < maximum else { return .failure(.total(maximum)) }
            guard state.unprivileged < maximum - reserved else { return .failure(.total(maximum)) }
            guard state.perUser[peer.uid, default: 0] < maximumPerUser else { return .failure(.perUser(maximumPerUser)) }
            state.total += 1
            state.unprivileged += 1
            state.perUser[peer.uid, default: 0] += 1
            return .success(Admission(uid: peer.uid, privileged: false))
        }
        guard case .failure = unprivilegedAdmission, isPrivileged(peer) else { return unprivilegedAdmission }
        return state.withLock { state in
            guard state.total < maximum else { return .failure(.total(maximum)) }
            state.total += 1
            return .success(Admission(uid: peer.uid, privileged: true))
        }
    }

    /// Uncounts a connection.
    func release(_ admission: Admission) {
        state.withLock { state in
            state.total -= 1
            guard !admission.privileged else { return }
            state.unprivileged -= 1
            let remaining = state.perUser[admission.uid, default: 1] - 1
            state.perUser[admission.uid] = remaining > 0 ? remaining : nil
        }
    }
}
