import ErrorBusHTTP

// Code blocks of the ErrorBusHTTP articles (Sources/ErrorBusHTTP/ErrorBusHTTP.docc) that are not
// part of the daemon's own path. Each compiles here, and the article quotes the lines between its
// markers (scripts/lib/samples.py checks that they agree).

/// GettingStarted.md: the API, with the rules an administrator wrote for it.
func reportAPI(baseURL: String, classify lines: [String]) throws(ClassificationOverride.ParseError) -> ReportAPI {
    // sample: http-override
    // Each line as an administrator writes it, e.g. "409=transient" for an API that answers 409
    // while another upload of the same report is under way; a line that is no rule throws.
    let rules = try lines.map { line throws(ClassificationOverride.ParseError) in
        try ClassificationOverride.parse(line).get()
    }
    return ReportAPI(baseURL: baseURL, classify: rules)
    // end sample
}
