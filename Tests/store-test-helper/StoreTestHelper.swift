import Glibc

/// `store-test-helper`: a real process for the store's tests and measurements.
///
/// - `store-test-helper crash DIRECTORY PREFIX`: opens the job store and changes jobs as fast as
///   it can, printing each change once it is committed, until it is killed (the crash tests send
///   SIGKILL) or a minute has passed. See ``CrashLoop``.
/// - `store-test-helper bench DIRECTORY`: measures the store and prints the figures. See
///   ``StoreBenchmark``.
@main
enum StoreTestHelper {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch (arguments.first, arguments.count) {
            case ("crash", 3):
                try await CrashLoop(directory: arguments[1], prefix: arguments[2]).run()
            case ("bench", 2):
                try await StoreBenchmark(directory: arguments[1]).run()
            default:
                Output.error("usage: store-test-helper crash DIRECTORY PREFIX | bench DIRECTORY")
                exit(64)
            }
        } catch {
            Output.error("store-test-helper: \(error)")
            exit(1)
        }
    }
}
