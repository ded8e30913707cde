import FoundationEssentials
public import Logging
public import NIOCore
import NIOFoundationEssentialsCompat
public import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection to a Varlink service on a Unix socket.
///
/// ```swift
/// try await VarlinkClient.withConnection(to: "/run/notesd/org.example.notes", logger: logger) { client in
///     let note = try await client.call(Notes.get, .init(id: 1))
///     for try await note in try await client.stream(Notes.watch, VarlinkEmpty()) {
///         print(note)
///     }
/// }
/// ```
///
/// Varlink answers one call at a time per connection, so a client is used by one task at a
/// time (it is not `Sendable`): calls wait for their reply before the next is sent. A call that
/// the service answers with an error throws ``VarlinkError``; a call that cannot be made or whose
/// reply cannot be read throws ``VarlinkClientError``, and after a timeout or a protocol violation
/// the connection is closed and every later call throws too.
public final class VarlinkClient {
    /// Limits of a client.
    public struct Configuration: Sendable {
        /// The longest reply accepted, in bytes. Default: 16 MiB.
        public var maximumMessageSize: Int
        /// How long connecting may take. Default: 5 seconds.
        public var connectTimeout: Duration
        /// How long a call (``VarlinkClient/call(_:_:timeout:)``) may wait for its reply unless
        /// it says otherwise; `nil` for no limit. Default: 30 seconds.
        public var callTimeout: Duration?

        /// A configuration with the default limits.
        public init(maximumMessageSize: Int = 16 << 20, connectTimeout: Duration = .seconds(5), callTimeout: Duration? = .seconds(30)) {
            self.maximumMessageSize = maximumMessageSize
            self.connectTimeout = connectTimeout
            self.callTimeout = callTimeout
        }
    }

    private enum State: Equatable {
        case idle
        case busy
        /// A stream of replies has not ended; the connection is unusable until it does.
        case streaming
        /// The connection failed; every call throws this.
        case failed(VarlinkClientError)
    }

    private let channel: any Channel
    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private let configuration: Configuration
    private let logger: Logger
    private let encoder = VarlinkWire.makeEncoder()
    private let decoder = VarlinkWire.makeDecoder()
    private var state = State.idle

    private init(
        channel: any Channel,
        inbound: NIOAsyncChannelInboundStream<ByteBuffer>,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        configuration: Configuration,
        logger: Logger
    ) {
        self.channel = channel
        self.inbound = inbound.makeAsyncIterator()
        self.outbound = outbound
        self.configuration = configuration
        self.logger = logger
    }

    /// Connects to the service listening at `path`, runs `body` with the connection, and closes
    /// it when `body` returns or throws.
    ///
    /// - Throws: ``VarlinkClientError`` with code ``VarlinkClientError/Code/connectFailed`` if the
    ///   service cannot be reached, or what `body` throws.
    public static func withConnection<Result>(
        to path: String,
        configuration: Configuration = Configuration(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        _ body: (VarlinkClient) async throws -> Result
    ) async throws -> Result {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: eventLoopGroup)
                .connectTimeout(TimeAmount(configuration.connectTimeout))
                .connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(VarlinkFrameDecoder(maximumMessageSize: configuration.maximumMessageSize))
                        )
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            let errno = (error as? IOError)?.errnoCode
            throw VarlinkClientError(.connectFailed, errno: errno, "cannot connect to \(path): \(error)")
        }
        return try await channel.executeThenClose { inbound, outbound in
            let client = VarlinkClient(
                channel: channel.channel,
                inbound: inbound,
                outbound: outbound,
                configuration: configuration,
                logger: logger
            )
            return try await body(client)
        }
    }

    /// Calls a method and returns its reply.
    ///
    /// - Parameters:
    ///   - method: The method's declaration, shared with the service.
    ///   - parameters: The call's parameters.
    ///   - timeout: How long to wait for the reply; `nil` for the configuration's `callTimeout`
    ///     (which may itself be `nil`, for no limit).
    /// - Throws: ``VarlinkError`` if the service answers with an error, ``VarlinkClientError``
    ///   otherwise.
    public func call<Parameters, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ parameters: Parameters,
        timeout: Duration? = nil
    ) async throws -> Reply {
        try begin()
        try await send(method.qualifiedName, parameters, oneway: nil, more: nil)
        let (reply, continues) = try await receive(Reply.self, timeout: timeout ?? configuration.callTimeout)
        guard !continues else {
            throw fail(VarlinkClientError(.protocolViolation, "\(method.qualifiedName) sent more than one reply to a call without 'more'"))
        }
        state = .idle
        return reply
    }

    /// Calls a method without parameters and returns its reply.
    public func call<Reply>(_ method: VarlinkMethod<VarlinkEmpty, Reply>, timeout: Duration? = nil) async throws -> Reply {
        try await call(method, VarlinkEmpty(), timeout: timeout)
    }

    /// Calls a method with `oneway` set: the service sends no reply, so none is awaited.
    public func callOneway<Parameters, Reply>(_ method: VarlinkMethod<Parameters, Reply>, _ parameters: Parameters) async throws {
        try begin()
        try await send(method.qualifiedName, parameters, oneway: true, more: nil)
        state = .idle
    }

    /// Calls a method with `more` set and returns its replies as they arrive.
    ///
    /// The sequence ends after the reply without `continues`, or throws ``VarlinkError`` if the
    /// service ends the stream with an error. Until the sequence has ended the connection takes
    /// no other call: to abandon a stream, end the connection.
    ///
    /// - Parameters:
    ///   - method: The method's declaration, shared with the service.
    ///   - parameters: The call's parameters.
    ///   - timeout: How long to wait for each reply; `nil` (the default) for no limit.
    public func stream<Parameters, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ parameters: Parameters,
        timeout: Duration? = nil
    ) async throws -> VarlinkReplyStream<Reply> {
        try begin()
        try await send(method.qualifiedName, parameters, oneway: nil, more: true)
        state = .streaming
        return VarlinkReplyStream(client: self, timeout: timeout)
    }

    /// Reads the next reply of a stream; `nil` once it has ended.
    func nextStreamed<Reply: Decodable>(_ type: Reply.Type, timeout: Duration?) async throws -> (reply: Reply, continues: Bool) {
        do {
            let (reply, continues) = try await receive(type, timeout: timeout)
            if !continues { state = .idle }
            return (reply, continues)
        } catch let error as VarlinkError {
            // An error is a stream's last reply.
            state = .idle
            throw error
        }
    }

    private func begin() throws {
        switch state {
        case .idle:
            state = .busy
        case .busy:
            throw VarlinkClientError(.busy, "another call is in progress on this connection")
        case .streaming:
            throw VarlinkClientError(.busy, "a stream of replies on this connection has not ended")
        case .failed(let error):
            throw error
        }
    }

    private func send<Parameters: Encodable>(_ method: String, _ parameters: Parameters, oneway: Bool?, more: Bool?) async throws {
        let message: ByteBuffer
        do {
            let call = VarlinkWire.Call(method: method, parameters: parameters, oneway: oneway, more: more)
            message = try VarlinkWire.frame(call, encoder: encoder, allocator: channel.allocator)
        } catch {
            state = .idle
            throw error
        }
        do {
            try await outbound.write(message)
        } catch {
            let failure = fail(VarlinkClientError(.connectionClosed, "the connection closed: \(error)"))
            // The service may have said why before it closed the connection (a limit it enforces).
            throw await closingReason() ?? failure
        }
    }

    /// The error reply the service sent before closing the connection, if it sent one.
    private func closingReason() async -> VarlinkError? {
        // The channel is closed: what it had read is still delivered, then the stream ends.
        guard let message = try? await inbound.next(isolation: #isolation),
            let reply = try? decoder.decode(VarlinkWire.ErrorReply.self, from: message)
        else { return nil }
        return VarlinkError(name: reply.error, parameters: reply.parameters ?? .emptyObject)
    }

    /// Reads one reply: its parameters and whether more follow.
    private func receive<Reply: Decodable>(_ type: Reply.Type, timeout: Duration?) async throws -> (Reply, continues: Bool) {
        let message = try await nextMessage(timeout: timeout)
        let header: VarlinkWire.ReplyHeader
        do {
            header = try decoder.decode(VarlinkWire.ReplyHeader.self, from: message)
        } catch {
            throw fail(VarlinkClientError(.protocolViolation, "the service sent a message that is not a reply: \(error)"))
        }
        if header.error != nil {
            do {
                let reply = try decoder.decode(VarlinkWire.ErrorReply.self, from: message)
                throw VarlinkError(name: reply.error, parameters: reply.parameters ?? .emptyObject)
            } catch let error as VarlinkError {
                if state == .busy { state = .idle }
                throw error
            } catch {
                throw fail(VarlinkClientError(.protocolViolation, "the service sent an error reply that cannot be read: \(error)"))
            }
        }
        do {
            let body = try decoder.decode(VarlinkWire.ReplyParameters<Reply>.self, from: message)
            let reply = try body.parameters ?? VarlinkWire.decodeEmpty(Reply.self, decoder: decoder)
            return (reply, header.continues ?? false)
        } catch {
            // The framing is intact: the connection stays usable once this call is over.
            if header.continues != true, state == .busy { state = .idle }
            throw VarlinkClientError(.invalidReply, "the reply does not match \(Reply.self): \(error)")
        }
    }

    private func nextMessage(timeout: Duration?) async throws -> ByteBuffer {
        let expired = Expiry()
        let deadline = timeout.map { timeout in
            channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { [channel] in
                expired.flag.store(true, ordering: .relaxed)
                channel.close(promise: nil)
            }
        }
        defer { deadline?.cancel() }
        do {
            guard let message = try await inbound.next(isolation: #isolation) else {
                throw VarlinkClientError(.connectionClosed, "the service closed the connection")
            }
            return message
        } catch let error where expired.flag.load(ordering: .relaxed) {
            _ = error
            throw fail(VarlinkClientError(.timeout, "no reply within \(timeout.map { "\($0)" } ?? "")"))
        } catch let error as VarlinkClientError {
            throw fail(error)
        } catch let error as VarlinkFrameDecoder.MessageTooLarge {
            throw fail(VarlinkClientError(.protocolViolation, "a reply exceeded \(error.maximumMessageSize) bytes"))
        } catch let error as IOError {
            // NIO's own description repeats the call's name and a stray parenthesis; the errno's
            // text is what a person can act on.
            throw fail(VarlinkClientError(.connectionClosed, errno: error.errnoCode, "the connection failed: \(String(cString: strerror(error.errnoCode)))"))
        } catch {
            throw fail(VarlinkClientError(.connectionClosed, "the connection failed: \(error)"))
        }
    }

    /// Marks the connection failed, closes it, and returns the error to throw.
    private func fail(_ error: VarlinkClientError) -> VarlinkClientError {
        logger.debug("Varlink connection failed", metadata: ["error": "\(error)"])
        state = .failed(error)
        channel.close(promise: nil)
        return error
    }

    /// Set by a call's deadline when it closes the connection.
    private final class Expiry: Sendable {
        let flag = Atomic(false)
    }
}
