import ErrorBus

// sample: authenticator
/// The access token of the API's realm, and the bus's authenticator for that realm.
///
/// When requests are refused with `401`, the bus opens one `unauthenticated` incident for the
/// realm and calls ``reauthenticate(realm:)`` once, however many jobs of however many services
/// failed; they wait, parked, and run again once it answers `.renewed`.
actor Credentials: Authenticator {
    private let api: SimulatedAPI
    private let secret: String
    /// What every request carries; `nil` until the first sign-in.
    private(set) var token: String?

    init(api: SimulatedAPI, secret: String) {
        self.api = api
        self.secret = secret
    }

    func reauthenticate(realm: String) async -> ReauthenticationResult {
        do {
            token = try await api.signIn(secret: secret)
            return .renewed
        } catch .secretRefused {
            // Signing in again cannot help: the incident waits for an operator.
            return .rejected(OperatorText(
                title: "Client secret refused",
                message: "\(api.host) refused the client secret of realm \(realm).",
                next: "Replace the secret, then retry the incident; its jobs stay parked until then."
            ))
        } catch {
            // The bus asks again, with back-off.
            return .unavailable(reason: "cannot sign in at \(api.host): \(error)")
        }
    }
}
// end sample
