import FoundationEssentials
import Logging
import NIOCore
import NIOFoundationEssentialsCompat
import ServiceLifecycle

/// The interfaces a server serves and the handlers of their methods.
///
/// Build it before the server starts: add each interface, then implement its methods. The
/// router implements `org.varlink.service` itself, and answers calls to unknown interfaces or
/// methods, to methods without a handler, and with invalid parameters, with the standard errors.
///
/// ```swift
/// var router = VarlinkRouter(vendor: "Example", product: "notesd", version: "1.0", url: "https://example.org/notes")
/// try router.add(Notes.interface())
/// try router.implement(Notes.get) { parameters, context in
///     guard let note = notebook.note(id: parameters.id) else { throw Notes.noSuchNote.error(parameters) }
///     return note
/// }
/// try router.implementStreaming(Notes.watch) { parameters, context, replies in
///     for await note in notebook.watch() { try await replies.send(note) }
///     throw CancellationError()  // cancelled: the client left or the server is stopping
/// }
/// ```
public struct VarlinkRouter: Sendable {
    /// The errors the server answers with about a connection itself.
    public let serverErrors: VarlinkServerErrors
    private var info: VarlinkService.Info
    private var interfaces: [String: VarlinkInterface] = [:]
    private var handlers: [String: MethodHandler] = [:]

    /// Handles one call of one method: decodes the parameters, runs the handler, sends the replies.
    /// Throws only when the connection fails.
    typealias MethodHandler = @Sendable (_ message: ByteBuffer, _ context: VarlinkCallContext, _ sink: ReplySink) async throws -> Void

    /// Creates a router for a service; `GetInfo` answers with these values. The server's own
    /// errors are declared in ``VarlinkServerErrors/defaultInterfaceName``.
    public init(vendor: String, product: String, version: String, url: String) {
        do {
            try self.init(vendor: vendor, product: product, version: version, url: url, errorInterface: VarlinkServerErrors.defaultInterfaceName)
        } catch {
            fatalError("\(VarlinkServerErrors.defaultInterfaceName) is declared wrongly: \(error)")
        }
    }

    /// Creates a router for a service whose own errors (``VarlinkServerErrors``) are declared in
    /// the interface `errorInterface`, a name in the service's reverse domain.
    ///
    /// - Throws: ``VarlinkDeclarationError`` if `errorInterface` is not an interface name.
    public init(vendor: String, product: String, version: String, url: String, errorInterface: String) throws {
        self.serverErrors = VarlinkServerErrors(interfaceName: errorInterface)
        self.info = VarlinkService.Info(vendor: vendor, product: product, version: version, url: url)
        addBuiltIn(VarlinkService.interface)
        addBuiltIn(try serverErrors.interface)
    }

    /// Adds an interface. Its methods answer `MethodNotImplemented` until they are implemented.
    ///
    /// - Throws: ``VarlinkDeclarationError`` if the router already has an interface of that name.
    public mutating func add(_ interface: VarlinkInterface) throws {
        guard interfaces[interface.name] == nil else { throw VarlinkDeclarationError.duplicateName(interface.name) }
        addBuiltIn(interface)
    }

    private mutating func addBuiltIn(_ interface: VarlinkInterface) {
        interfaces[interface.name] = interface
        info.interfaces.append(interface.name)
        // `org.varlink.service` answers from a snapshot of the interfaces, taken again each time.
        let info = self.info
        let descriptions = interfaces.mapValues(\.description)
        implementUnchecked(VarlinkService.getInfo) { _, _ in info }
        implementUnchecked(VarlinkService.getInterfaceDescription) { parameters, _ in
            guard let description = descriptions[parameters.interface] else {
                throw VarlinkService.interfaceNotFound.error(.init(interface: parameters.interface))
            }
            return VarlinkService.InterfaceDescription(description: description)
        }
    }

    /// Implements a method that sends one reply.
    ///
    /// The handler receives the decoded parameters and the call's context (the peer's
    /// credentials among them) and returns the reply. It answers with an error by throwing a
    /// ``VarlinkError``; any other error is logged and answered with
    /// `InternalError` (``VarlinkServerErrors``). A call with `more` set gets the one reply; a `oneway`
    /// call gets none.
    ///
    /// - Throws: ``VarlinkDeclarationError`` if the method's interface has not been added or does
    ///   not declare the method.
    public mutating func implement<Parameters, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        handler: @escaping @Sendable (Parameters, VarlinkCallContext) async throws -> Reply
    ) throws {
        try checkDeclared(method)
        implementUnchecked(method, handler: handler)
    }

    /// Implements a method that sends any number of replies to a call with `more` set.
    ///
    /// The handler sends every reply but the last through the ``VarlinkReplyWriter`` (each with
    /// `continues: true`) and returns the last. A call without `more` is answered with
    /// `org.varlink.service.ExpectedMore` and a `oneway` call is ignored, without running the
    /// handler. When the client disconnects or the server shuts down gracefully, the handler's
    /// task is cancelled (and ``VarlinkReplyWriter/send(_:)`` throws): it may still return a last
    /// reply, which is sent if the connection is open.
    ///
    /// - Throws: ``VarlinkDeclarationError`` if the method's interface has not been added or does
    ///   not declare the method.
    public mutating func implementStreaming<Parameters, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        handler: @escaping @Sendable (Parameters, VarlinkCallContext, VarlinkReplyWriter<Reply>) async throws -> Reply
    ) throws {
        try checkDeclared(method)
        let decoder = parameterDecoder(for: method)
        handlers[method.qualifiedName] = { message, context, sink in
            guard let parameters = try await Self.decodeParameters(Parameters.self, from: message, decoder: decoder, sink: sink) else {
                return
            }
            guard !context.oneway else { return }
            guard context.more else {
                try await sink.write(error: VarlinkService.expectedMore.error())
                return
            }
            let replies = VarlinkReplyWriter<Reply>(sink: sink)
            defer { replies.finish() }
            let last: Reply
            do {
                guard let reply = try await Self.cancellingOnCloseOrShutdown(sink.closeFuture, {
                    try await handler(parameters, context, replies)
                }) else { return }
                last = reply
            } catch {
                try await sink.write(failure: error, context: context)
                return
            }
            try await sink.write(last, continues: false)
        }
    }

    private mutating func implementUnchecked<Parameters, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        handler: @escaping @Sendable (Parameters, VarlinkCallContext) async throws -> Reply
    ) {
        let decoder = parameterDecoder(for: method)
        handlers[method.qualifiedName] = { message, context, sink in
            guard let parameters = try await Self.decodeParameters(Parameters.self, from: message, decoder: decoder, sink: sink) else {
                return
            }
            let reply: Reply
            do {
                reply = try await handler(parameters, context)
            } catch {
                try await sink.write(failure: error, context: context)
                return
            }
            try await sink.write(reply, continues: false)
        }
    }

    private func checkDeclared<Parameters, Reply>(_ method: VarlinkMethod<Parameters, Reply>) throws {
        guard let interface = interfaces[method.interface] else {
            throw VarlinkDeclarationError.unknownInterface(method.interface)
        }
        guard interface.methods[method.name] != nil else {
            throw VarlinkDeclarationError.unknownMethod(method.qualifiedName)
        }
    }

    private func parameterDecoder<Parameters, Reply>(for method: VarlinkMethod<Parameters, Reply>) -> JSONDecoder {
        VarlinkWire.makeDecoder(parameterNames: interfaces[method.interface]?.methods[method.name]?.parameterNames)
    }
}

extension VarlinkRouter {
    /// What the connection does after a call.
    enum Disposition {
        case keepOpen
        case close
    }

    /// Answers one message: finds the method, runs its handler, sends the replies.
    ///
    /// Never throws: a message that is not a call is answered with `InvalidMessage` and the
    /// connection closed; a connection that fails while replying is closed.
    func respond(to message: ByteBuffer, connection: VarlinkConnectionContext) async -> Disposition {
        let header: VarlinkWire.CallHeader
        do {
            header = try connection.decoder.decode(VarlinkWire.CallHeader.self, from: message)
        } catch {
            connection.logger.info("Closing a Varlink connection that sent an invalid message", metadata: ["error": "\(error)"])
            try? await connection.sink(oneway: false).write(error: serverErrors.invalidMessage.error())
            return .close
        }
        let oneway = header.oneway ?? false
        let sink = connection.sink(oneway: oneway)
        let context = VarlinkCallContext(
            method: header.method,
            peer: connection.peer,
            more: header.more ?? false,
            oneway: oneway,
            logger: connection.logger
        )
        do {
            if header.upgrade == true {
                // No method of this server upgrades the connection to another protocol.
                try await sink.write(error: VarlinkService.invalidParameter.error(.init(parameter: "upgrade")))
            } else if let handler = handlers[header.method] {
                try await handler(message, context, sink)
            } else {
                try await sink.write(error: notFound(header.method))
            }
            return .keepOpen
        } catch {
            connection.logger.debug("Closing a Varlink connection that failed while replying", metadata: ["error": "\(error)"])
            return .close
        }
    }

    /// The error for a method without handler: its interface or the method is unknown, or it is
    /// not implemented.
    private func notFound(_ method: String) -> VarlinkError {
        guard let dot = method.lastIndex(of: ".") else {
            return VarlinkService.interfaceNotFound.error(.init(interface: method))
        }
        let interfaceName = String(method[..<dot])
        guard let interface = interfaces[interfaceName] else {
            return VarlinkService.interfaceNotFound.error(.init(interface: interfaceName))
        }
        guard interface.methods[String(method[method.index(after: dot)...])] != nil else {
            return VarlinkService.methodNotFound.error(.init(method: method))
        }
        return VarlinkService.methodNotImplemented.error(.init(method: method))
    }

    /// Decodes a call's parameters, or answers `InvalidParameter` naming the first parameter that
    /// is missing, of the wrong type, or unknown, and returns `nil`.
    private static func decodeParameters<Parameters: Decodable>(
        _ type: Parameters.Type,
        from message: ByteBuffer,
        decoder: JSONDecoder,
        sink: ReplySink
    ) async throws -> Parameters? {
        do {
            let call = try decoder.decode(VarlinkWire.CallParameters<Parameters>.self, from: message)
            if let parameters = call.parameters { return parameters }
            return try VarlinkWire.decodeEmpty(Parameters.self, decoder: decoder)
        } catch let error as VarlinkWire.UnknownParameter {
            try await sink.write(error: VarlinkService.invalidParameter.error(.init(parameter: error.name)))
        } catch let error as DecodingError {
            try await sink.write(error: VarlinkService.invalidParameter.error(.init(parameter: error.parameterName)))
        }
        return nil
    }

    /// Runs a streaming handler, cancelling it when the connection closes or the server begins
    /// a graceful shutdown; `nil` if it was stopped so and did not return a last reply.
    private static func cancellingOnCloseOrShutdown<Result: Sendable>(
        _ closeFuture: EventLoopFuture<Void>,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result? {
        let (closed, closedContinuation) = AsyncStream.makeStream(of: Never.self)
        closeFuture.whenComplete { _ in closedContinuation.finish() }
        return try await withThrowingTaskGroup(of: StreamOutcome<Result>.self) { group in
            group.addTask { .returned(try await body()) }
            group.addTask {
                // Ends when the connection closes, the server shuts down, or the handler has returned.
                for await _ in closed.cancelOnGracefulShutdown() {}
                return .stopped
            }
            var stopped = false
            while true {
                do {
                    switch try await group.next() {
                    case .returned(let result):
                        group.cancelAll()
                        return result
                    case .stopped:
                        stopped = true
                        group.cancelAll()
                    case nil:
                        return nil
                    }
                } catch {
                    // A handler that was stopped ends as it may, usually with a CancellationError.
                    if stopped { return nil }
                    group.cancelAll()
                    throw error
                }
            }
        }
    }

    private enum StreamOutcome<Result: Sendable>: Sendable {
        case returned(Result)
        case stopped
    }
}

extension DecodingError {
    /// The top-level parameter a decoding error is about: the first key after `parameters`.
    var parameterName: String {
        let path: [any CodingKey]
        switch self {
        case .keyNotFound(let key, let context): path = context.codingPath + [key]
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): path = context.codingPath
        @unknown default: path = []
        }
        let keys = path.drop { $0.stringValue == VarlinkWire.Key.parameters.rawValue && $0.intValue == nil }
        return keys.first?.stringValue ?? VarlinkWire.Key.parameters.rawValue
    }
}
