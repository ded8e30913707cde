/// The replies to a call with `more`, as they arrive (``VarlinkClient/stream(_:_:timeout:)``).
///
/// It ends after the reply without `continues`; it throws ``VarlinkError`` if the service ends the
/// stream with an error, and ``VarlinkClientError`` if the connection fails. Iterate it once.
public struct VarlinkReplyStream<Reply: Decodable>: AsyncSequence {
    public typealias Element = Reply

    private let client: VarlinkClient
    private let timeout: Duration?

    init(client: VarlinkClient, timeout: Duration?) {
        self.client = client
        self.timeout = timeout
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client, timeout: timeout)
    }

    /// Reads the replies one by one.
    public struct Iterator: AsyncIteratorProtocol {
        private let client: VarlinkClient
        private let timeout: Duration?
        private var finished = false

        init(client: VarlinkClient, timeout: Duration?) {
            self.client = client
            self.timeout = timeout
        }

        public mutating func next() async throws -> Reply? {
            guard !finished else { return nil }
            do {
                let (reply, continues) = try await client.nextStreamed(Reply.self, timeout: timeout)
                finished = !continues
                return reply
            } catch {
                finished = true
                throw error
            }
        }
    }
}
