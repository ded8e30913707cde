/// A resource the sandbox serves at `GET /v1/resources/{name}` from the start.
public struct SandboxResource: Sendable, Equatable {
    /// The `{name}` in the path.
    public var name: String
    /// Its `Content-Type`.
    public var contentType: String
    /// Its body.
    public var content: [UInt8]

    /// Creates a resource from bytes.
    public init(name: String, contentType: String, content: [UInt8]) {
        self.name = name
        self.contentType = contentType
        self.content = content
    }

    /// Creates a resource from text (stored as UTF-8).
    public init(name: String, contentType: String, text: String) {
        self.init(name: name, contentType: contentType, content: Array(text.utf8))
    }

    /// The seed set: `settings` (JSON), `motd` (text) and `blocklist` (text).
    public static let defaults: [SandboxResource] = [
        SandboxResource(
            name: "settings",
            contentType: "application/json",
            text: #"{"pollIntervalSeconds":60,"uploadsEnabled":true,"maxItemBytes":67108864}"# + "\n"
        ),
        SandboxResource(name: "motd", contentType: "text/plain; charset=utf-8", text: "Welcome to the errorbus sandbox.\n"),
        SandboxResource(name: "blocklist", contentType: "text/plain; charset=utf-8", text: "198.51.100.7\n203.0.113.42\n"),
    ]
}
