import Foundation
import Logging
import NotesInterface
import NotesService
import ServiceLifecycle
import Testing
import Varlink

@Suite(.timeLimit(.minutes(1)))
struct NotesServiceTests {
    @Test func addsAndGetsNotes() async throws {
        try await withNotesServer { path in
            try await VarlinkClient.withConnection(to: path, logger: quiet) { client in
                let added = try await client.call(Notes.add, .init(text: "buy milk"))
                #expect(added.id == 1)
                #expect(added.text == "buy milk")
                #if os(Linux)
                // The server knows the caller from the kernel (SO_PEERCRED): this process.
                #expect(added.author == getuid())
                #endif
                #expect(try await client.call(Notes.get, .init(id: 1)) == added)
            }
        }
    }

    @Test func anUnknownIdIsNoSuchNote() async throws {
        try await withNotesServer { path in
            try await VarlinkClient.withConnection(to: path, logger: quiet) { client throws in
                let error = await #expect(throws: VarlinkError.self) {
                    try await client.call(Notes.get, .init(id: 7))
                }
                #expect(error?.name == "org.example.notes.NoSuchNote")
                #expect(try error.flatMap(Notes.noSuchNote.parameters(of:)) == Notes.NoteID(id: 7))
                // An error reply ends the call, not the connection.
                #expect(try await client.call(Notes.add, .init(text: "still here")).id == 1)
            }
        }
    }

    @Test func watchReplaysTheNotesThenSendsNewOnes() async throws {
        try await withNotesServer { path in
            try await VarlinkClient.withConnection(to: path, logger: quiet) { writer in
                _ = try await writer.call(Notes.add, .init(text: "first"))
                // A connection carries one call at a time, and a stream occupies it until it
                // ends: watch on a connection of its own.
                try await VarlinkClient.withConnection(to: path, logger: quiet) { watcher in
                    var notes = try await watcher.stream(Notes.watch, VarlinkEmpty()).makeAsyncIterator()
                    #expect(try await notes.next()?.text == "first")
                    _ = try await writer.call(Notes.add, .init(text: "second"))
                    #expect(try await notes.next()?.text == "second")
                }
                // Closing the watcher's connection ended its call; the server is none the worse.
                #expect(try await writer.call(Notes.get, .init(id: 2)).text == "second")
            }
        }
    }

    @Test func servesItsInterfaceDefinition() async throws {
        try await withNotesServer { path in
            try await VarlinkClient.withConnection(to: path, logger: quiet) { client in
                // sample: varlink-definition
                let reply = try await client.call(VarlinkService.getInterfaceDescription, .init(interface: Notes.interfaceName))
                #expect(reply.description == """
                    # Short notes, kept in memory.
                    interface org.example.notes

                    # Adds a note and returns it, with its id.
                    method Add(text: string) -> (id: int, text: string, author: int)

                    # The note with this id.
                    method Get(id: int) -> (id: int, text: string, author: int)

                    # Every note, oldest first, then each new one as it is added; call it with 'more'.
                    method Watch() -> (id: int, text: string, author: int)

                    # No note has this id.
                    error NoSuchNote (id: int)

                    """)
                // end sample
            }
        }
    }
}

let quiet = Logger(label: "notes-tests", factory: { _ in SwiftLogNoOpLogHandler() })

// sample: varlink-test-server
/// Runs the notes server on a socket in a new directory while `body` runs, then shuts it down
/// gracefully, as SIGTERM would.
func withNotesServer(_ body: (_ socketPath: String) async throws -> Void) async throws {
    // Short, under /tmp: a socket's path must fit in 104 bytes (macOS) or 108 (Linux).
    let directory = "/tmp/notes-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: directory) }

    let (listening, isListening) = AsyncStream.makeStream(of: Void.self)
    let server = VarlinkServer(
        router: try makeRouter(serving: Notebook()),
        configuration: .init(address: .unixSocket(path: "\(directory)/notes.sock")),
        logger: quiet,
        onListening: { isListening.finish() }
    )
    let group = ServiceGroup(services: [server], logger: quiet)
    try await withThrowingTaskGroup { tasks in
        tasks.addTask {
            // Also ends the wait below if the server cannot listen.
            defer { isListening.finish() }
            try await group.run()
        }
        for await _ in listening {}
        try await body("\(directory)/notes.sock")
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
    }
}
// end sample
