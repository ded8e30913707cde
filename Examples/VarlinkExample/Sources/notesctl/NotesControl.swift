import Logging
import NotesInterface
import Varlink

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `notesctl SOCKET add TEXT | get ID | watch`: calls `org.example.notes` on `SOCKET`.
@main
struct NotesControl {
    static func main() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2 else { usage() }
        let (socketPath, command, operands) = (arguments[0], arguments[1], Array(arguments.dropFirst(2)))
        // The client logs only at debug level, about connections it gives up.
        let logger = Logger(label: "notesctl")

        do {
            // sample: varlink-client
            try await VarlinkClient.withConnection(to: socketPath, logger: logger) { client in
                switch command {
                case "add":
                    guard !operands.isEmpty else { usage() }
                    let note = try await client.call(Notes.add, .init(text: operands.joined(separator: " ")))
                    print("added note \(note.id)")
                case "get":
                    guard operands.count == 1, let id = Int(operands[0]) else { usage() }
                    let note = try await client.call(Notes.get, .init(id: id))
                    print("\(note.id) (uid \(note.author)): \(note.text)")
                case "watch":
                    // One reply per note, as they come, until the server ends the call.
                    for try await note in try await client.stream(Notes.watch, VarlinkEmpty()) {
                        print("\(note.id) (uid \(note.author)): \(note.text)")
                    }
                default:
                    usage()
                }
            }
            // end sample
        } catch let error as VarlinkError {
            fail(message(for: error))
        } catch let error as VarlinkClientError {
            fail("\(error)")
        }
    }

    // sample: varlink-client-error
    /// What to tell the user about an error the service answered with.
    ///
    /// An error the interface declares comes with its parameters. Any other, such as
    /// `org.varlink.service.PermissionDenied`, is a `VarlinkError` too, with its name.
    static func message(for error: VarlinkError) -> String {
        if let missing = try? Notes.noSuchNote.parameters(of: error) {
            return "there is no note \(missing.id)"
        }
        return "the service answered \(error)"
    }
    // end sample

    static func usage() -> Never {
        printError("usage: notesctl SOCKET add TEXT... | get ID | watch")
        exit(64)
    }

    static func fail(_ message: String) -> Never {
        printError("notesctl: \(message)")
        exit(1)
    }
}

/// Writes a line to standard error. (`fputs(_, stderr)` does not compile in Swift 6 on Linux:
/// `stderr` is a mutable global there.)
func printError(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
}
