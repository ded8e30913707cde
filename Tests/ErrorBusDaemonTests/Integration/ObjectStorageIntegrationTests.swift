import AsyncHTTPClient
import Crypto
import ErrorBusControl
@testable import ErrorBusDaemon
import Foundation
import NIOHTTP1
import Glibc
import NIOCore
import NIOFoundationEssentialsCompat
import TestSupport
import Testing
import Varlink

/// errorbusd uploading to object storage nobody here wrote: moto's S3 server, its authentication
/// on (every request's signature checked against the access key it made), as the bucket. Files go
/// under a key template, signed with `aws-sigv4`, with their SHA-256 as the checksum the store
/// keeps and hands back as the receipt.
@Suite("Integration: errorbusd uploading to moto's S3", .serialized, .timeLimit(.minutes(3)))
struct ObjectStorageIntegrationTests {
    /// The object-storage contract: each file under `/{hostname}/{year}/{month}/{day}/{name}` in
    /// the bucket (path-style: the bucket is the base URL's path), its checksum kept by the store
    /// and returned as the receipt.
    static let contract = """
          upload:
            url: /{hostname}/{year}/{month}/{day}/{name}
            idempotency-header:
            headers: ["x-amz-sdk-checksum-algorithm: SHA256", "x-amz-checksum-sha256: {sha256-base64}"]
            receipt:
              header: x-amz-checksum-sha256
              value: "{sha256-base64}"
        """

    static func auth(_ moto: MotoS3Process, _ more: String = "") -> String {
        "  method: aws-sigv4\n  access-key-id: \(moto.info.accessKeyId)\n  region: \(moto.info.region)" + more
    }

    /// Files with names a key must encode, one larger than a chunk (streamed from disk).
    static let files: [(name: String, content: Data)] = [
        ("report 1.txt", Data("first report\n".utf8)),
        ("ünïcode+50%.csv", Data("a,b\n1,2\n".utf8)),
        ("large.bin", Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })),
    ]

    /// Stops `daemon` (expecting a clean exit) and moto, whatever `body` did.
    static func run(_ daemon: DaemonProcess, _ moto: MotoS3Process, _ body: (HTTPClient) async throws -> Void) async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await daemon.start()
            try await body(http)
            let finished = try await daemon.stop()
            #expect(finished.status == 0, "errorbusd exited with \(finished.status):\n\(finished.standardError)")
        } catch {
            _ = try? await daemon.kill()
            try? await http.shutdown()
            await moto.stop()
            throw error
        }
        try await http.shutdown()
        await moto.stop()
    }

    @Test func eachFileIsStoredUnderItsKeyWithItsBytesAndChecksum() async throws {
        let moto = try await MotoS3Process()
        let scratch = try ScratchDirectory("s3")
        let bucketURL = moto.info.endpoint + "/" + moto.info.bucket
        let daemon = try DaemonProcess(
            in: scratch, baseURL: bucketURL, api: Self.contract, auth: Self.auth(moto), credentials: ["secret-access-key": moto.info.secretAccessKey + "\n"]
        )
        let day = Self.utcDay()
        try await Self.run(daemon, moto) { http in
            for file in Self.files { try daemon.drop(file.name, content: file.content) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let keys = try await Self.keys(moto, http: http)
            let host = Self.hostName()
            for file in Self.files {
                let key = try #require(keys.first { $0.hasSuffix("/" + file.name) }, "no object for \(file.name) among \(keys)")
                // Queued today (or, at midnight, yesterday): the key holds that day, UTC.
                #expect(key == "\(host)/\(day)/\(file.name)" || key.hasPrefix("\(host)/") && key.split(separator: "/").count == 5, "\(key)")
                let stored = try await Self.send("GET", key, moto, http: http, headers: [("x-amz-checksum-mode", "ENABLED")])
                #expect(stored.status == 200 && stored.body == file.content, "\(file.name): \(stored.status)")
                #expect(stored.headers.first(name: "x-amz-checksum-sha256") == Data(SHA256.hash(data: file.content)).base64EncodedString(), "\(file.name)")
            }
            #expect(keys.count == Self.files.count, "\(keys)")
        }
    }

    @Test func aWrongSecretIsOneIncidentNamingTheCredentialAndTheRightOneLetsTheWorkGo() async throws {
        let moto = try await MotoS3Process()
        let scratch = try ScratchDirectory("s3-wrong-secret")
        let secretFile = scratch.file("secret-access-key")
        try ("wrong" + moto.info.secretAccessKey + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(
            in: scratch, baseURL: moto.info.endpoint + "/" + moto.info.bucket, api: Self.contract,
            auth: Self.auth(moto, "\n  secret-access-key-file: \(secretFile)"), credentials: [:]
        )
        try await Self.run(daemon, moto) { http in
            for number in 0..<6 { try daemon.drop("file-\(number).txt", content: Data("file \(number)\n".utf8)) }
            try await daemon.waitForLog("needs an operator")
            try await daemon.waitForParked(6, under: 1)
            let incidents = try await ForeignServerIntegrationTests.incidents(daemon)
            #expect(incidents.count == 1, "\(incidents)")
            let incident = try #require(incidents.first)
            #expect(incident.category == .unauthenticated)
            #expect(incident.state == "needsOperator")
            #expect(incident.cause == "s3SignatureDoesNotMatch", "\(incident)")
            #expect(incident.next?.contains(secretFile) == true, "\(incident)")
            #expect(try daemon.outboxFiles().count == 6)
            #expect(try await Self.keys(moto, http: http).isEmpty)

            // The operator fixes the secret and reloads: the held work goes.
            try (moto.info.secretAccessKey + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
            try daemon.signal(SIGHUP)
            try await daemon.waitForLog("configuration reloaded")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await Self.keys(moto, http: http).count == 6)
        }
    }

    /// The probe is a signed `HEAD` of the bucket: the incident waits until the bucket is there,
    /// then the work goes by itself.
    @Test func aBucketThatIsNotThereIsOneIncidentNamingItUntilItIsMade() async throws {
        let moto = try await MotoS3Process()
        let scratch = try ScratchDirectory("s3-no-bucket")
        let daemon = try DaemonProcess(
            in: scratch, baseURL: moto.info.endpoint + "/no-such-bucket", api: Self.contract, auth: Self.auth(moto),
            credentials: ["secret-access-key": moto.info.secretAccessKey]
        )
        try await Self.run(daemon, moto) { http in
            for number in 0..<3 { try daemon.drop("file-\(number).txt", content: Data("file \(number)\n".utf8)) }
            try await daemon.waitForLog("incident 1 opened: ")
            try await daemon.waitForParked(3, under: 1)
            // The probe has looked, and found no bucket.
            try await daemon.waitForLog("the store has no such bucket")
            let incidents = try await ForeignServerIntegrationTests.incidents(daemon)
            #expect(incidents.count == 1, "\(incidents)")
            let incident = try #require(incidents.first)
            #expect(incident.category == .unreachable, "\(incident)")
            #expect(incident.cause == "s3NoSuchBucket", "\(incident)")
            #expect(incident.message.contains("\"no-such-bucket\""), "\(incident)")
            #expect(try daemon.outboxFiles().count == 3)

            let made = try await Self.send("PUT", "", moto, http: http, bucket: "no-such-bucket")
            #expect(made.status == 200, "\(String(decoding: made.body, as: UTF8.self))")
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await Self.keys(moto, http: http, bucket: "no-such-bucket").count == 3)
        }
    }

    /// Virtual-hosted addressing (the bucket in the host's name, `BUCKET.s3.test`), through an
    /// HTTP proxy with a sign-in, as a host on a corporate network reaches a cloud's store: squid
    /// resolves the bucket's name (its own hosts file; nothing here resolves `*.s3.test`), moto
    /// takes the bucket from the `Host` the request was signed with.
    @Test func aVirtualHostedBucketIsReachedThroughAProxy() async throws {
        guard SquidProcess.executable != nil else { return }
        let moto = try await MotoS3Process()
        let scratch = try ScratchDirectory("s3-virtual-host")
        let host = "\(moto.info.bucket).s3.test"
        let squid = try await SquidProcess(in: scratch, users: [ProxyIntegrationTests.user: ProxyIntegrationTests.password], hosts: [host: "127.0.0.1"])
        try await squid.start()
        let port = try #require(moto.info.endpoint.split(separator: ":").last)
        let daemon = try DaemonProcess(
            in: scratch, baseURL: "http://\(host):\(port)",
            api: Self.contract + "\n  proxy: \(squid.url)\n  proxy-user: \(ProxyIntegrationTests.user)",
            auth: Self.auth(moto),
            credentials: ["secret-access-key": moto.info.secretAccessKey, "proxy-password": ProxyIntegrationTests.password]
        )
        do {
            try await Self.run(daemon, moto) { http in
                for file in Self.files { try daemon.drop(file.name, content: file.content) }
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                let keys = try await Self.keys(moto, http: http)
                #expect(keys.count == Self.files.count, "\(keys)")
                for file in Self.files {
                    let key = try #require(keys.first { $0.hasSuffix("/" + file.name) }, "no object for \(file.name) among \(keys)")
                    let stored = try await Self.send("GET", key, moto, http: http)
                    #expect(stored.status == 200 && stored.body == file.content, "\(file.name): \(stored.status)")
                }
                _ = try await daemon.stop()
                try await squid.waitForAccess("TCP_TUNNEL/200", "CONNECT \(host):\(port) \(ProxyIntegrationTests.user)")
                try await daemon.start()
            }
        } catch {
            await squid.stop()
            throw error
        }
        await squid.stop()
    }

    /// A store that paces (nginx's `limit_req` in front of moto, answering `503 SlowDown` with
    /// S3's XML body past 4 requests a second, as S3 does per prefix): the scope's pacing, never
    /// a bad file. Every file arrives; none is a dead letter; the refusals are told as `SlowDown`.
    @Test func aStoreThatSaysSlowDownPacesTheUploadsAndLosesNone() async throws {
        guard NginxProcess.executable != nil else { return }
        let moto = try await MotoS3Process()
        let scratch = try ScratchDirectory("s3-slow-down")
        let nginx = try Self.inFront(of: moto, in: scratch, pacedAt: 4)
        try await nginx.start()
        let daemon = try DaemonProcess(
            in: scratch, baseURL: nginx.baseURL + "/" + moto.info.bucket, api: Self.contract, auth: Self.auth(moto),
            credentials: ["secret-access-key": moto.info.secretAccessKey],
            // As shipped: a cause that comes back within 10 s is the same incident.
            environment: ["ERRORBUSD_BUS_SETTLE_WINDOW": "10s"]
        )
        let count = 40
        do {
            try await Self.run(daemon, moto) { http in
                for number in 0..<count { try daemon.drop("file-\(number).txt", content: Data("file \(number)\n".utf8)) }
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                #expect(try await Self.keys(moto, http: http).count == count)
                let dead = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listDeadLetters, .init()) }
                #expect(dead.jobs.isEmpty, "\(dead.jobs)")
                let statuses = try String(contentsOfFile: nginx.directory + "/status.log", encoding: .utf8).split(separator: "\n")
                let slowDowns = statuses.filter { $0.hasPrefix("503 PUT") }.count
                print("slow down: nginx answered \(slowDowns) of \(statuses.count) requests with 503 SlowDown for \(count) files")
                #expect(slowDowns > 0, "the store never paced: \(statuses.count) requests")
                // One incident, the store's pacing: nothing held back, no file singled out.
                let opened = daemon.log.split(separator: "\n").filter { $0.contains(" opened: ") }
                #expect(opened.count == 1, "\(opened)")
                #expect(opened.first?.contains("Object store asks to slow down") == true, "\(opened)")
                #expect(opened.first?.contains("ERRORBUS_CATEGORY=rateLimited") == true, "\(opened)")
                #expect(!daemon.log.contains("set aside"), "\(daemon.log.suffix(3000))")
            }
        } catch {
            await nginx.stop()
            throw error
        }
        await nginx.stop()
    }

    /// nginx in front of moto, as a balancer: passing every request on, its `Host` kept (the
    /// signature covers it); with `pacedAt`, past that many requests a second (and a burst of 2)
    /// it answers `503 SlowDown` with S3's XML body, as S3 does per prefix.
    static func inFront(of moto: MotoS3Process, in scratch: borrowing ScratchDirectory, pacedAt rate: Int? = nil) throws -> NginxProcess {
        let motoPort = try #require(moto.info.endpoint.split(separator: ":").last)
        let zone = rate.map { "limit_req_zone $binary_remote_addr zone=store:1m rate=\($0)r/s;" } ?? ""
        let pacing = rate == nil ? "" : "limit_req zone=store burst=2 nodelay;\n            limit_req_status 503;\n            error_page 503 = @slowdown;"
        return try NginxProcess(in: scratch, servers: """
            \(zone)
            log_format status '$status $request_method $uri';
            server {
                listen 127.0.0.1:{port};
                access_log {root}/status.log status;
                client_max_body_size 0;
                location / {
                    \(pacing)
                    proxy_pass http://127.0.0.1:\(motoPort);
                    proxy_set_header Host $http_host;
                    proxy_http_version 1.1;
                    proxy_request_buffering off;
                }
                location @slowdown {
                    default_type application/xml;
                    return 503 '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>';
                }
            }
            """)
    }

    /// The store's endpoint down (its balancer stopped: connections refused) is an outage: one
    /// `unreachable` incident holding every upload, which the probe ends once it is back.
    @Test func aStoreThatIsDownIsAnOutageAndItsReturnDeliversEverything() async throws {
        guard NginxProcess.executable != nil else { return }
        let moto = try await MotoS3Process()
        let scratch = try ScratchDirectory("s3-down")
        let nginx = try Self.inFront(of: moto, in: scratch)
        try await nginx.start()
        let daemon = try DaemonProcess(
            in: scratch, baseURL: nginx.baseURL + "/" + moto.info.bucket, api: Self.contract, auth: Self.auth(moto),
            credentials: ["secret-access-key": moto.info.secretAccessKey]
        )
        do {
            try await Self.run(daemon, moto) { http in
                await nginx.stop()
                for number in 0..<3 { try daemon.drop("file-\(number).txt", content: Data("file \(number)\n".utf8)) }
                try await daemon.waitForParked(3, under: 1)
                let incidents = try await ForeignServerIntegrationTests.incidents(daemon)
                #expect(incidents.count == 1, "\(incidents)")
                #expect(incidents.first?.category == .unreachable, "\(incidents)")
                #expect(incidents.first?.cause == "connectionRefused", "\(incidents)")
                #expect(try await Self.keys(moto, http: http).isEmpty)

                try await nginx.start()
                try await daemon.waitForLog("incident 1 recovered")
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                #expect(try await Self.keys(moto, http: http).count == 3)
            }
        } catch {
            await nginx.stop()
            throw error
        }
        await nginx.stop()
    }

    // MARK: - Large files in parts

    static let partsContract = contract + """

            parts:
              above: 5MiB
              size: 5MiB
              parallel: 2
        """

    /// 40 MiB of random bytes: eight parts of 5 MiB.
    static func largeFile() throws -> Data {
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? random.close() }
        return random.readData(ofLength: 40 << 20)
    }

    /// A daemon sending files above 5 MiB in parts of 5 MiB, two at once, to moto's bucket.
    static func partsDaemon(_ scratch: borrowing ScratchDirectory, _ moto: MotoS3Process) throws -> DaemonProcess {
        try DaemonProcess(
            in: scratch, baseURL: moto.info.endpoint + "/" + moto.info.bucket, api: partsContract, auth: auth(moto),
            credentials: ["secret-access-key": moto.info.secretAccessKey]
        )
    }

    /// Starts `daemon`, drops `content` as big.bin, and kills it (`kill -9`) once three of its
    /// eight parts are stored.
    static func killedAfterThreeParts(_ daemon: DaemonProcess, _ content: Data) async throws {
        try await daemon.start()
        try daemon.drop("big.bin", content: content)
        try await daemon.waitForLog("of 8 of big.bin stored", count: 3)
        _ = try await daemon.kill()
    }

    @Test func aLargeFileGoesInPartsAndAKillResumesAtTheNextPart() async throws {
        let scratch = try ScratchDirectory("s3-parts")
        let log = scratch.file("moto.log")
        let moto = try await MotoS3Process(log: log)
        let daemon = try Self.partsDaemon(scratch, moto)
        let content = try Self.largeFile()
        do {
            try await Self.killedAfterThreeParts(daemon, content)
        } catch {
            await moto.stop()
            throw error
        }
        try await Self.run(daemon, moto) { http in
            try await daemon.waitForLog("resuming the upload of big.bin in parts: ")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let key = try #require(try await Self.keys(moto, http: http).first { $0.hasSuffix("/big.bin") })
            let stored = try await Self.send("GET", key, moto, http: http)
            #expect(stored.status == 200 && stored.body.count == content.count)
            #expect(SHA256.hash(data: stored.body) == SHA256.hash(data: content), "the object is not the file")

            // No part stored twice: those the store took before errorbusd recorded them are taken
            // from its list (by their ETag, the MD5 of the part). Only a part cut on its way by
            // the kill, which the store never took, is sent again.
            let requests = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            let parts = requests.filter { $0.contains("partNumber=") && $0.contains("\" 200") }
            #expect(parts.count == 8, "\(parts.count) parts stored for 8:\n\(parts.joined(separator: "\n"))")
            let resumed = try daemon.current.standardError.text
            #expect(resumed.contains("parts already stored"))
            #expect(try await Self.multipartUploads(moto, http: http).isEmpty)
        }
    }

    /// The store forgot the upload while errorbusd was stopped (aborted by a lifecycle rule or
    /// an operator): the next part is refused with `NoSuchUpload`, and the file starts again.
    @Test func anUploadTheStoreForgotStartsAgain() async throws {
        let scratch = try ScratchDirectory("s3-parts-forgotten")
        let moto = try await MotoS3Process()
        let daemon = try Self.partsDaemon(scratch, moto)
        let content = try Self.largeFile()
        do {
            try await Self.killedAfterThreeParts(daemon, content)
            let http = HTTPClient.shared
            let listing = try await Self.send("GET", "", moto, http: http, query: "?uploads")
            let text = String(decoding: listing.body, as: UTF8.self)
            let key = try #require(text.components(separatedBy: "<Key>").dropFirst().first?.components(separatedBy: "</Key>").first)
            let upload = try #require(try await Self.multipartUploads(moto, http: http).first)
            let aborted = try await Self.send("DELETE", key, moto, http: http, query: "?uploadId=" + AWSSignatureV4.encoded(upload))
            #expect(aborted.status == 204)
        } catch {
            await moto.stop()
            throw error
        }
        try await Self.run(daemon, moto) { http in
            try await daemon.waitForLog("no longer knows the upload of big.bin in parts: starting it again")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let key = try #require(try await Self.keys(moto, http: http).first { $0.hasSuffix("/big.bin") })
            let stored = try await Self.send("GET", key, moto, http: http)
            #expect(SHA256.hash(data: stored.body) == SHA256.hash(data: content), "the object is not the file")
            #expect(try await Self.multipartUploads(moto, http: http).isEmpty)
        }
    }

    /// A daemon sending files to moto's bucket under `url` with `If-None-Match: *`, by `contract`.
    static func neverReplacing(_ contract: String, url: String, _ scratch: borrowing ScratchDirectory, _ moto: MotoS3Process) throws -> DaemonProcess {
        let contract = contract
            .replacingOccurrences(of: "url: /{hostname}/{year}/{month}/{day}/{name}", with: "url: \(url)")
            .replacingOccurrences(of: #"headers: ["#, with: #"headers: ["If-None-Match: *", "#)
        return try DaemonProcess(
            in: scratch, baseURL: moto.info.endpoint + "/" + moto.info.bucket, api: contract, auth: auth(moto),
            credentials: ["secret-access-key": moto.info.secretAccessKey]
        )
    }

    /// `If-None-Match: *`, the URL made of the content: what the store has there already is the
    /// file (a delivery whose answer was lost, the file dropped again), so its `412` is a
    /// delivery, for a file in one request and one in parts (whose upload is aborted, leaving no
    /// parts behind); the stored objects are not replaced.
    @Test func anObjectTheStoreHasUnderItsContentAlreadyIsDeliveredWithoutReplacingIt() async throws {
        let scratch = try ScratchDirectory("s3-exists")
        let moto = try await MotoS3Process()
        let daemon = try Self.neverReplacing(Self.partsContract, url: "/by-content/{sha256}", scratch, moto)
        let small = Data("stored before\n".utf8)
        let large = try Self.largeFile()
        try await Self.run(daemon, moto) { http in
            for content in [small, large] {
                let stored = try await Self.send("PUT", "by-content/" + ContentKey.hex(of: SHA256.hash(data: content)), moto, http: http, body: content)
                #expect(stored.status == 200)
            }
            try daemon.drop("again.txt", content: small)
            try daemon.drop("big.bin", content: large)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let log = try daemon.current.standardError.text
            #expect(log.components(separatedBy: "is stored already: ").count == 3, "\(log.suffix(3000))")
            #expect(!log.contains("dead letter"))
            #expect(try await Self.keys(moto, http: http).count == 2)
            #expect(try await Self.multipartUploads(moto, http: http).isEmpty, "the parts were left behind")
        }
    }

    /// `If-None-Match: *`, the URL made of the name: an object of that name in the store may be
    /// another file's, so the file is a dead letter saying so, and the object is not replaced; the
    /// other files go.
    @Test func anObjectOfTheSameNameIsNotReplacedAndTheFileIsADeadLetterSayingSo() async throws {
        let scratch = try ScratchDirectory("s3-taken")
        let moto = try await MotoS3Process()
        let daemon = try Self.neverReplacing(Self.contract, url: "/by-name/{name}", scratch, moto)
        let theirs = Data("someone else's\n".utf8)
        try await Self.run(daemon, moto) { http in
            #expect(try await Self.send("PUT", "by-name/taken.txt", moto, http: http, body: theirs).status == 200)
            try daemon.drop("taken.txt", content: Data("mine\n".utf8))
            try daemon.drop("free.txt", content: Data("free\n".utf8))
            try await daemon.waitForLog("taken.txt set aside as a dead letter")
            #expect(daemon.log.contains("holds an object at /\(moto.info.bucket)/by-name/taken.txt already, and If-None-Match: * (api.upload.headers) keeps it from being replaced"), "\(daemon.log.suffix(3000))")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0 == ["taken.txt"] || $0.isEmpty }
            #expect(try await Self.send("GET", "by-name/taken.txt", moto, http: http).body == theirs, "replaced")
            #expect(try await Self.send("GET", "by-name/free.txt", moto, http: http).body == Data("free\n".utf8))
        }
    }

    /// The store hangs half way (moto stopped with `SIGSTOP`: connections accepted, nothing
    /// answered): the parts on the way time out, an incident holds the file, and once the store
    /// answers again the upload goes on from the parts it has.
    @Test func aLargeFileResumesAfterTheStoreHungHalfWay() async throws {
        let scratch = try ScratchDirectory("s3-parts-hang")
        let log = scratch.file("moto.log")
        let moto = try await MotoS3Process(log: log)
        let daemon = try Self.partsDaemon(scratch, moto)
        let content = try Self.largeFile()
        try await Self.run(daemon, moto) { http in
            try daemon.drop("big.bin", content: content)
            try await daemon.waitForLog("of 8 of big.bin stored", count: 3)
            kill(moto.info.serverPid, SIGSTOP)
            try await daemon.waitForLog("incident 1 opened: ")
            kill(moto.info.serverPid, SIGCONT)
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let key = try #require(try await Self.keys(moto, http: http).first { $0.hasSuffix("/big.bin") })
            let stored = try await Self.send("GET", key, moto, http: http)
            #expect(SHA256.hash(data: stored.body) == SHA256.hash(data: content), "the object is not the file")
            #expect(try daemon.current.standardError.text.contains("parts already stored"), "started again from zero")
            // Parts the store took twice: at most those on the way when it hung (their answers
            // lost), however many attempts the incident made.
            let parts = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").filter { $0.contains("partNumber=") && $0.contains("\" 200") }
            #expect(parts.count <= 8 + 2, "\(parts.count) parts stored for 8")
            #expect(try await Self.multipartUploads(moto, http: http).isEmpty)
        }
    }

    @Test func aJobThatEndsWithoutADeliveryLeavesNoUploadInPartsBehind() async throws {
        let scratch = try ScratchDirectory("s3-parts-gone")
        let moto = try await MotoS3Process()
        let daemon = try Self.partsDaemon(scratch, moto)
        do {
            try await Self.killedAfterThreeParts(daemon, try Self.largeFile())
        } catch {
            await moto.stop()
            throw error
        }
        // The file removed while errorbusd was stopped: its job is discarded at start, and the
        // store's parts of it with it.
        try FileManager.default.removeItem(atPath: daemon.outbox + "/big.bin")
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let left = try await Self.multipartUploads(moto, http: http)
        try await http.shutdown()
        #expect(left.count == 1, "the killed upload is the store's until aborted: \(left)")
        try await Self.run(daemon, moto) { http in
            try await daemon.waitForLog("aborted the multipart upload of job")
            #expect(try await Self.multipartUploads(moto, http: http).isEmpty)
            #expect(try await Self.keys(moto, http: http).isEmpty)
        }
    }

    /// The bucket's multipart uploads in progress (ListMultipartUploads): their upload ids.
    static func multipartUploads(_ moto: MotoS3Process, http: HTTPClient) async throws -> [String] {
        let listing = try await send("GET", "", moto, http: http, query: "?uploads")
        #expect(listing.status == 200, "\(String(decoding: listing.body, as: UTF8.self))")
        return String(decoding: listing.body, as: UTF8.self).components(separatedBy: "<UploadId>").dropFirst()
            .compactMap { $0.components(separatedBy: "</UploadId>").first }
    }

    // MARK: - Reading the bucket, signed

    /// The bucket's keys (ListObjectsV2).
    static func keys(_ moto: MotoS3Process, http: HTTPClient, bucket: String? = nil) async throws -> [String] {
        let listing = try await send("GET", "", moto, http: http, query: "?list-type=2", bucket: bucket)
        #expect(listing.status == 200, "\(String(decoding: listing.body, as: UTF8.self))")
        let text = String(decoding: listing.body, as: UTF8.self)
        return text.components(separatedBy: "<Key>").dropFirst().compactMap { $0.components(separatedBy: "</Key>").first }
            .map { $0.replacingOccurrences(of: "&amp;", with: "&") }
    }

    /// A request signed with the bucket's key: `key` under the bucket, `query` as sent.
    static func send(
        _ method: String, _ key: String, _ moto: MotoS3Process, http: HTTPClient, query: String = "", headers: [(String, String)] = [],
        bucket: String? = nil, body: Data? = nil
    ) async throws -> (status: UInt, headers: HTTPHeaders, body: Data) {
        let info = moto.info
        var request = HTTPClientRequest(url: info.endpoint + AWSSignatureV4.encodedPath((bucket ?? info.bucket) + (key.isEmpty ? "" : "/" + key)) + query)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let signer = AWSSignatureV4(credentials: .init(accessKeyID: info.accessKeyId, secretAccessKey: info.secretAccessKey), region: info.region)
        if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
            signer.sign(&request, payloadHash: ContentKey.hex(of: SHA256.hash(data: body)))
        } else {
            signer.sign(&request, payloadHash: AWSSignatureV4.emptyPayloadHash)
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = Data(buffer: try await response.body.collect(upTo: 64 << 20))
        return (response.status.code, response.headers, body)
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        return String(cString: buffer)
    }

    /// Today, UTC, as `YYYY/MM/DD`.
    static func utcDay() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d/%02d/%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday)
    }
}
