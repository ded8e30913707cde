import NotesInterface
public import Varlink

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Implements `Add` for a service that lets only root and its own user add notes: the handler
/// authorizes each call by its peer's credentials, which the kernel reported (SO_PEERCRED).
/// ``makeRouter(serving:)`` lets anyone add notes.
public func implementRestrictedAdd(in router: inout VarlinkRouter, notebook: Notebook) throws {
    // sample: varlink-peer-credentials
    try router.implement(Notes.add) { parameters, context in
        guard context.peer.isRoot || context.peer.uid == getuid() else {
            throw VarlinkService.permissionDenied.error()
        }
        return notebook.add(text: parameters.text, author: context.peer.uid)
    }
    // end sample
}
