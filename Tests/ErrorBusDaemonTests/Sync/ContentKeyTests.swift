@testable import ErrorBusDaemon
import Foundation
import Testing

/// An outbox file's key is the lowercase hex SHA-256 of its content: the API checks what it
/// receives against it, and the same content dropped twice is one item.
@Suite struct ContentKeyTests {
    @Test(arguments: [
        (Data(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (Data("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        // More than one 64 KiB read.
        (Data(repeating: UInt8(ascii: "a"), count: 200_000), "2287d207f24a941ff3b56c04c8a25ad56b63e3023207b3bb5b4ac0c9869d74be"),
    ])
    func theKeyIsTheHexSHA256OfTheContent(content: Data, key: String) throws {
        let scratch = try ScratchDirectory("content-key")
        let path = scratch.file("item.bin")
        try content.write(to: URL(fileURLWithPath: path))
        #expect(try ContentKey.of(fileAt: path) == key)
    }
}
