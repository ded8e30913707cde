import ErrorBusDaemon
import Foundation

/// A temporary directory for one configuration test: a YAML file, a secret, a credentials
/// directory. Removed when the test's closure returns.
struct ConfigurationFixture {
    /// The directory's path.
    let directory: String

    /// Runs `body` with a fresh directory and removes it afterwards.
    static func with<Result>(_ body: (ConfigurationFixture) async throws -> Result) async throws -> Result {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("errorbusd-configuration-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(ConfigurationFixture(directory: path))
    }

    /// Writes `contents` to `name` in the directory (creating subdirectories) and returns its path.
    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        let path = directory + "/" + name
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true
        )
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The built-in defaults, with the secret ``credentials(secret:name:)`` holds by default and
    /// where it came from.
    var defaults: DaemonConfiguration {
        DaemonConfiguration(auth: .init(
            secret: Secret("s3cret"),
            secretSource: .credential(name: "client-secret", path: directory + "/credentials/client-secret")
        ))
    }

    /// A credentials directory holding `client-secret`, as systemd's `LoadCredential=` makes it.
    func credentials(secret: String = "s3cret\n", name: String = "client-secret") throws -> [String: String] {
        try write("credentials/\(name)", secret)
        return ["CREDENTIALS_DIRECTORY": directory + "/credentials"]
    }

    /// Loads `yaml` (written to `errorbusd.yaml`) with `environment` and a credentials directory.
    func load(_ yaml: String, environment: [String: String] = [:]) async throws -> DaemonConfiguration {
        let file = try write("errorbusd.yaml", yaml)
        let environment = try credentials().merging(environment) { _, new in new }
        return try DaemonConfiguration.load(file: file, environment: environment)
    }

    /// The error loading `yaml` (written to `errorbusd.yaml`) with `environment` and a
    /// credentials directory gives, or `nil` if it loads.
    func loadError(_ yaml: String?, environment: [String: String] = [:]) async throws -> ConfigurationError? {
        let file = try yaml.map { try write("errorbusd.yaml", $0) }
        let environment = try credentials().merging(environment) { _, new in new }
        do {
            _ = try DaemonConfiguration.load(file: file, environment: environment)
            return nil
        } catch {
            return error
        }
    }

    /// The path of `errorbusd.yaml` in the directory, as error messages name it.
    var yamlPath: String { directory + "/errorbusd.yaml" }
}
