import Glibc

/// Unbuffered writes to the standard streams: a line is in the pipe as soon as `line` returns,
/// so a reader sees it even if the process is killed right after.
enum Output {
    /// Writes `lines`, each ended by a newline, with as few `write(2)` calls as possible (each at
    /// most `PIPE_BUF` bytes, so lines from concurrent tasks never interleave).
    static func lines(_ lines: [String]) {
        var chunk = ""
        for line in lines {
            if chunk.utf8.count + line.utf8.count + 1 > 4096 {
                write(chunk, to: 1)
                chunk = ""
            }
            chunk += line + "\n"
        }
        if !chunk.isEmpty { write(chunk, to: 1) }
    }

    static func line(_ line: String) {
        lines([line])
    }

    /// A line on standard error.
    static func error(_ line: String) {
        write(line + "\n", to: 2)
    }

    private static func write(_ text: String, to descriptor: CInt) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    exit(2)
                }
            }
        }
    }
}
