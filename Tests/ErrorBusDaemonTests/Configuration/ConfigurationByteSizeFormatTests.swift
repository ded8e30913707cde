import ErrorBusUnits
import Testing

@testable import ErrorBusDaemon

@Suite struct ConfigurationByteSizeFormatTests {
    @Test(arguments: [
        ("104857600", Int64(104_857_600)),
        ("100_000", 100_000),
        ("0", 0),
        ("512KiB", 524_288),
        ("10MiB", 10_485_760),
        ("10 MiB", 10_485_760),
        ("10mib", 10_485_760),
        ("1GiB", 1_073_741_824),
        ("2TiB", 2_199_023_255_552),
        ("10M", 10_485_760),
        ("1k", 1_024),
        ("1kB", 1_000),
        ("10MB", 10_000_000),
        ("1GB", 1_000_000_000),
        ("7B", 7),
    ])
    func parses(text: String, expected: Int64) {
        #expect(ByteSizeFormat.parse(text) == expected)
    }

    @Test(arguments: ["", "MiB", "-1", "1.5MiB", "ten", "10 XB", "10MiBs", "99999999999TiB", "0x10"])
    func rejects(text: String) {
        #expect(ByteSizeFormat.parse(text) == nil)
    }

    @Test func formatsWithTheLargestExactBinaryUnit() {
        #expect(ByteCountText.exact(104_857_600) == "100MiB")
        #expect(ByteCountText.exact(1_024) == "1KiB")
        #expect(ByteCountText.exact(1_000) == "1000")
        #expect(ByteCountText.exact(1) == "1")
    }
}
