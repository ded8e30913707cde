/// How the sandbox listens and what it accepts. Every field has a usable default.
public struct SandboxConfiguration: Sendable {
    /// Address to bind; loopback by default.
    public var host: String
    /// Port to bind; 0 picks a free one (reported through `onListening`).
    public var port: Int
    /// The OAuth client id the token endpoint accepts.
    public var clientID: String
    /// The OAuth client secret the token endpoint accepts.
    public var clientSecret: String
    /// How long an issued access token stays valid (`expires_in`).
    public var tokenLifetime: Duration
    /// The largest item body `PUT /v1/items/{id}` accepts; larger ones get 413.
    public var maxItemBytes: Int
    /// How many recent requests `GET /admin/stats` lists.
    public var recentRequestCapacity: Int
    /// The resources served at start.
    public var resources: [SandboxResource]
    /// What the API can take from the start (`PUT /admin/capacity` changes it); unlimited when nil.
    public var capacity: CapacitySpec?

    /// Creates a configuration.
    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        clientID: String = "errorbus",
        clientSecret: String = "sandbox-secret",
        tokenLifetime: Duration = .seconds(3600),
        maxItemBytes: Int = 64 * 1024 * 1024,
        recentRequestCapacity: Int = 1024,
        resources: [SandboxResource] = SandboxResource.defaults,
        capacity: CapacitySpec? = nil
    ) {
        self.capacity = capacity
        self.host = host
        self.port = port
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.tokenLifetime = tokenLifetime
        self.maxItemBytes = maxItemBytes
        self.recentRequestCapacity = recentRequestCapacity
        self.resources = resources
    }
}
