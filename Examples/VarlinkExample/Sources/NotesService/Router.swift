import NotesInterface
public import Varlink

// sample: varlink-router
/// A router serving `org.example.notes` from `notebook`.
///
/// Adding the interface before implementing its methods lets the router check each handler
/// against the declaration, and answer `org.varlink.service.MethodNotImplemented` for any
/// method left out.
public func makeRouter(serving notebook: Notebook) throws -> VarlinkRouter {
    var router = VarlinkRouter(vendor: "Example", product: "notesd", version: "1.0", url: "https://example.org/notes")
    try router.add(Notes.interface())

    try router.implement(Notes.add) { parameters, context in
        // The kernel's word for who called (SO_PEERCRED), not the client's.
        notebook.add(text: parameters.text, author: context.peer.uid)
    }

    try router.implement(Notes.get) { parameters, _ in
        guard let note = notebook.note(id: parameters.id) else {
            throw Notes.noSuchNote.error(parameters)
        }
        return note
    }

    try router.implementStreaming(Notes.watch) { _, _, replies in
        for await note in notebook.watch() {
            try await replies.send(note)
        }
        // The notes never end; the loop does when the client hangs up or the server shuts
        // down, which cancels this task. Throwing then sends nothing: the call is over.
        throw CancellationError()
    }
    return router
}
// end sample
