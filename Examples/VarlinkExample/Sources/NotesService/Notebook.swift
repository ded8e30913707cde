public import NotesInterface
import Synchronization

/// The notes, in memory, and the streams of the clients watching them.
///
/// A `Mutex` rather than an actor: a watcher's stream ends in `onTermination`, which cannot
/// await the actor.
public final class Notebook: Sendable {
    private struct State {
        var notes: [Notes.Note] = []
        var watchers: [Int: AsyncStream<Notes.Note>.Continuation] = [:]
        var nextWatcher = 0
    }

    private let state = Mutex(State())

    public init() {}

    public func add(text: String, author: UInt32) -> Notes.Note {
        state.withLock { state in
            let note = Notes.Note(id: state.notes.count + 1, text: text, author: author)
            state.notes.append(note)
            for watcher in state.watchers.values { watcher.yield(note) }
            return note
        }
    }

    public func note(id: Int) -> Notes.Note? {
        state.withLock { state in
            state.notes.indices.contains(id - 1) ? state.notes[id - 1] : nil
        }
    }

    /// Every note so far, then each new one until the iterating task is cancelled.
    ///
    /// The replay and the registration happen under one lock, so a note added meanwhile is
    /// neither missed nor sent twice. The stream holds the notes its watcher has not taken yet:
    /// a client that reads slowly costs memory, up to every note (the server disconnects one
    /// that stops reading after its `writeTimeout`).
    public func watch() -> AsyncStream<Notes.Note> {
        let (stream, continuation) = AsyncStream.makeStream(of: Notes.Note.self)
        let id = state.withLock { state in
            defer { state.nextWatcher += 1 }
            return state.nextWatcher
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.watchers.removeValue(forKey: id) }
        }
        state.withLock { state in
            for note in state.notes { continuation.yield(note) }
            state.watchers[id] = continuation
        }
        return stream
    }
}
