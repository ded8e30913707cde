/// The configuration reference, written from the sections' tables: the example file with every
/// key at its default (`etc/errorbusd/errorbusd.yaml`), a Markdown page (`docs/configuration.md`)
/// and the man page `errorbusd.yaml(5)`. `errorbusd --config-reference FORMAT` prints them; the
/// test command checks that the checked-in copies are what this writes.
package enum ConfigurationReference {
    package enum Format: String, CaseIterable, Sendable {
        case yaml, markdown, man
    }

    /// The reference in `format`; `date` is the man page's (`November 25, 2026`).
    package static func text(_ format: Format, date: String = "") -> String {
        switch format {
        case .yaml: yaml()
        case .markdown: markdown()
        case .man: man(date: date)
        }
    }

    /// What every section and subsection is for, by dotted name.
    static let sectionDocs: [String: String] = {
        var docs: [String: String] = [:]
        for section in DaemonConfiguration.sections {
            docs[section.name] = section.doc
            for (name, doc) in section.subsections { docs[section.name + "." + name] = doc }
        }
        return docs
    }()

    static let rules = [
        """
        Keys are kebab-case, nested by section. A key errorbusd does not know is an error (with the nearest \
        known key), so a typo never silently falls back to a default. Leave a key out to get its default.
        """,
        """
        Files in errorbusd.yaml.d/ beside this one (*.yaml) are read after it, in name order: a key a later \
        file sets wins, a list it sets replaces the list. errorbusd --check-config --show prints every value and \
        where it came from.
        """,
        """
        Environment variables override the files: ERRORBUSD_ and the key upper-cased, with _ for every . and -: \
        api.base-url is ERRORBUSD_API_BASE_URL, sync.max-file-size is ERRORBUSD_SYNC_MAX_FILE_SIZE. A list is \
        comma-separated there. Unknown ERRORBUSD_* variables are errors too.
        """,
        """
        Durations: a number of seconds (30, 0.5) or a number with a unit: 500ms, 30s, 5m, 1h, 1d, also combined \
        (1h30m). Sizes: bytes, or with a unit: 512KiB, 10MiB, 1GiB (K, M, G are the same powers of 1024; kB, MB, \
        GB are powers of 1000).
        """,
        "Paths must be absolute.",
        """
        A bad value stops errorbusd with exit status 78 (EX_CONFIG) and one line naming the file, the line, the \
        key and what is wrong. SIGHUP (systemctl reload errorbusd) reads every file again; a key marked as \
        taking a restart is logged as such.
        """,
    ]

    // MARK: - The example file

    static func yaml() -> String {
        var lines = [
            "# /etc/errorbusd/errorbusd.yaml: errorbusd's configuration.",
            "#",
        ]
        lines += comment(
            """
            Every key is here, set to its default, so this file works as it is: against the local sandbox API \
            (errorbus-sandbox on 127.0.0.1:8080), with the client secret passed by systemd \
            (LoadCredential=client-secret:/etc/errorbusd/client-secret in errorbusd.service). For another API, start \
            from the example of its kind beside this file: webdav.yaml (a WebDAV server such as nginx, with basic \
            auth), bearer-api.yaml (an API taking a static token), mtls.yaml (a client certificate). This file is \
            generated (errorbusd --config-reference yaml).
            """,
            indent: 0
        )
        lines += ["#", "# Rules:"]
        for rule in rules {
            let wrapped = wrap(rule, width: 96)
            lines.append("# - " + wrapped[0])
            lines += wrapped.dropFirst().map { "#   " + $0 }
        }
        var open: [String] = []
        for key in ConfigurationKeys.table {
            let parents = key.key.split(separator: ".").dropLast().map(String.init)
            if open.first != parents.first { lines.append("") }
            var shared = 0
            while shared < min(open.count, parents.count), open[shared] == parents[shared] { shared += 1 }
            open = Array(open.prefix(shared))
            for component in parents.dropFirst(shared) {
                open.append(component)
                let path = open.joined(separator: ".")
                lines += comment(sectionDocs[path] ?? "", indent: 2 * (open.count - 1))
                lines.append(String(repeating: " ", count: 2 * (open.count - 1)) + component + ":")
            }
            let indent = 2 * open.count
            let pad = String(repeating: " ", count: indent)
            let name = String(key.key.split(separator: ".").last!)
            lines += comment(documentation(of: key), indent: indent)
            if let example = key.example {
                lines.append(pad + "# " + name + ": " + example)
            } else {
                lines.append(pad + name + ":" + (key.defaultValue.isEmpty ? "" : " " + yamlScalar(key.defaultValue)))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A key's documentation and its default.
    static func documentation(of key: ConfigurationKey) -> String {
        var facts: [String] = []
        if let bounds = key.bounds {
            facts.append(("aeiou".contains(key.type.first!) ? "An " : "A ") + key.type + " " + bounds + ".")
        } else if key.type.hasPrefix("one of ") {
            facts.append("O" + key.type.dropFirst() + ".")
        }
        if key.restart { facts.append("A change takes a restart.") }
        facts.append("Default: \(key.defaultText)")
        guard !key.doc.isEmpty else { return facts.joined(separator: " ") }
        let separator = key.doc.contains("\n  ") ? "\n" : " "
        return key.doc + separator + facts.joined(separator: " ")
    }

    /// `text` as comment lines, wrapped; its lines starting with two spaces kept as they are.
    static func comment(_ text: String, indent: Int) -> [String] {
        guard !text.isEmpty else { return [] }
        let pad = String(repeating: " ", count: indent) + "# "
        return paragraphs(text).flatMap { paragraph in
            switch paragraph {
            case .verbatim(let line): [pad + line]
            case .text(let text): wrap(text, width: 98 - pad.count).map { pad + $0 }
            }
        }
    }

    enum Paragraph {
        case text(String)
        case verbatim(String)
    }

    static func paragraphs(_ text: String) -> [Paragraph] {
        text.split(separator: "\n", omittingEmptySubsequences: true).map { line in
            line.hasPrefix("  ") ? .verbatim(String(line)) : .text(String(line))
        }
    }

    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    static func yamlScalar(_ text: String) -> String {
        let special = "{[&*!|>'\"%@`#,?:-"
        guard let first = text.first, special.contains(first) || text.contains(": ") || text.contains(" #") else { return text }
        if first == "[" && text.hasSuffix("]") { return text }  // a flow list, as a list's default is written
        return "\"" + text.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
    }

    // MARK: - Markdown

    static func markdown() -> String {
        var lines = [
            "# errorbusd's configuration",
            "",
            "<!-- Generated by `errorbusd --config-reference markdown` from the configuration's tables; the test command checks it. -->",
            "",
            """
            errorbusd reads `/etc/errorbusd/errorbusd.yaml` (`--config`), then every `*.yaml` in \
            `/etc/errorbusd/errorbusd.yaml.d/`, then `ERRORBUSD_*` environment variables. \
            [`etc/errorbusd/errorbusd.yaml`](../etc/errorbusd/errorbusd.yaml) is every key at its default, commented.
            """,
            "",
        ]
        lines += rules.map { "- " + markdownInline($0) }
        var section = ""
        for key in ConfigurationKeys.table {
            let top = String(key.key.split(separator: ".").first!)
            if top != section {
                section = top
                lines += ["", "## `\(top)`", ""]
                lines += markdownText(sectionDocs[top] ?? "")
            }
            lines += ["", "### `\(key.key)`", ""]
            if let (parent, doc) = firstOfSubsection(key) {
                lines += markdownText("`\(parent)`: " + doc) + [""]
            }
            if !key.doc.isEmpty { lines += markdownText(key.doc) + [""] }
            var type = key.type
            if let bounds = key.bounds { type += ", " + bounds }
            if key.shape == .optionalValue, !type.hasPrefix("list") { type += ", or nothing" }
            lines.append("- Type: \(type)")
            lines.append("- Default: " + (key.defaultNote ?? (key.defaultValue.isEmpty || key.defaultValue == "[]" ? key.defaultText : "`\(key.defaultValue)`")))
            lines.append("- Environment: `\(key.environmentVariable)`")
            lines.append("- A change takes effect: " + (key.restart ? "at a restart" : "at a reload"))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// For the first key of a subsection (`sync.backlog.max-bytes`): the subsection and what it
    /// is for.
    static func firstOfSubsection(_ key: ConfigurationKey) -> (String, String)? {
        let components = key.key.split(separator: ".")
        for depth in 2..<max(2, components.count) {
            let parent = components.prefix(depth).joined(separator: ".")
            if let doc = sectionDocs[parent], ConfigurationKeys.table.first(where: { $0.key.hasPrefix(parent + ".") })?.key == key.key
            {
                return (parent, doc)
            }
        }
        return nil
    }

    /// Markdown for a line of the documentation: words holding `<`, `*`, `_`, `$` or `=` as code.
    static func markdownInline(_ text: String) -> String {
        text.split(separator: " ", omittingEmptySubsequences: false).map { word -> String in
            let core = word.trimmingPrefix { "(\"".contains($0) }
            var end = core.endIndex
            while end > core.startIndex, ".,;:)\"".contains(core[core.index(before: end)]) { end = core.index(before: end) }
            let token = core[core.startIndex..<end]
            guard token.contains(where: { "<>*_$=".contains($0) }), !token.contains("`") else { return String(word) }
            return word[word.startIndex..<core.startIndex] + "`" + token + "`" + core[end...]
        }.joined(separator: " ")
    }

    static func markdownText(_ text: String) -> [String] {
        var lines: [String] = []
        var inCode = false
        for paragraph in paragraphs(text) {
            switch paragraph {
            case .verbatim(let line):
                if !inCode { lines += ["", "```yaml"] }
                inCode = true
                lines.append(String(line.dropFirst(2)))
            case .text(let text):
                if inCode { lines += ["```", ""] }
                inCode = false
                lines.append(markdownInline(text))
            }
        }
        if inCode { lines.append("```") }
        return lines
    }

    // MARK: - The man page

    static func man(date: String) -> String {
        var lines = [
            ".Dd \(date)",
            ".Dt ERRORBUSD.YAML 5",
            ".Os",
            ".Sh NAME",
            ".Nm errorbusd.yaml",
            ".Nd configuration of errorbusd",
            ".Sh DESCRIPTION",
        ]
        lines += manText(
            """
            errorbusd reads /etc/errorbusd/errorbusd.yaml (or the file given with --config), then every *.yaml file in \
            errorbusd.yaml.d beside it, then its ERRORBUSD_* environment variables. \
            /usr/share/doc/errorbusd/examples/errorbusd.yaml holds every key at its default.
            """
        )
        lines.append(".Bl -bullet")
        for rule in rules {
            lines.append(".It")
            lines += manText(rule)
        }
        lines.append(".El")
        var section = ""
        for key in ConfigurationKeys.table {
            let top = String(key.key.split(separator: ".").first!)
            if top != section {
                if !section.isEmpty { lines.append(".El") }
                section = top
                lines.append(".Ss \(top)")
                lines += manText(sectionDocs[top] ?? "")
                lines.append(".Bl -tag -width Ds")
            }
            lines.append(".It Cm \(key.key)")
            if let (parent, doc) = firstOfSubsection(key) { lines += manText("\(parent): " + doc) + [".Pp"] }
            if !key.doc.isEmpty { lines += manText(key.doc) }
            var type = key.type
            if let bounds = key.bounds { type += ", " + bounds }
            lines += manText("Type: \(type). Default: \(key.defaultText).")
            lines.append("Environment:")
            lines.append(".Ev \(key.environmentVariable) .")
            lines += manText(key.restart ? "A change takes a restart." : "A change takes a reload.")
        }
        lines.append(".El")
        lines += [
            ".Sh FILES",
            ".Bl -tag -width Ds",
            ".It Pa /etc/errorbusd/errorbusd.yaml",
            "The configuration.",
            ".It Pa /etc/errorbusd/errorbusd.yaml.d/*.yaml",
            "Drop-ins, read after it in name order.",
            ".El",
            ".Sh SEE ALSO",
            ".Xr errorbusctl 1 ,",
            ".Xr errorbusd 8",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text as mdoc lines: a sentence per line, requests escaped, verbatim lines in a display.
    static func manText(_ text: String) -> [String] {
        var lines: [String] = []
        var inDisplay = false
        for paragraph in paragraphs(text) {
            switch paragraph {
            case .verbatim(let line):
                if !inDisplay { lines.append(".Bd -literal -offset indent") }
                inDisplay = true
                lines.append(manEscape(String(line.dropFirst(2))))
            case .text(let text):
                if inDisplay { lines.append(".Ed") }
                inDisplay = false
                lines += sentences(text).map(manEscape)
            }
        }
        if inDisplay { lines.append(".Ed") }
        return lines
    }

    static func sentences(_ text: String) -> [String] {
        var result: [String] = []
        var current = ""
        let characters = Array(text)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            current.append(character)
            if ".?!:".contains(character), index + 2 < characters.count, characters[index + 1] == " ",
                characters[index + 2].isUppercase || characters[index + 2].isNumber, character != ":"
            {
                result.append(current)
                current = ""
                index += 2
                continue
            }
            index += 1
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    static func manEscape(_ line: String) -> String {
        var line = line.replacing("\\", with: "\\e").replacing("…", with: "...").replacing("×", with: "\\(mu")
        if line.hasPrefix(".") || line.hasPrefix("'") { line = "\\&" + line }
        return line
    }
}
