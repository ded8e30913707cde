import CBuildVersion

/// errorbus's version, as `errorbusd --version`, `errorbusctl --version` and the control
/// interface's `GetInfo` tell it.
public enum ErrorBusVersion {
    /// The last release this source is, or follows: what CHANGELOG.md and `debian/changelog`
    /// name, and what a library user's `from:` resolves.
    public static let release = "0.3.0"

    /// This build's version: ``release`` for a build of the release's commit, and
    /// `RELEASE+N.gCOMMIT` for a build N commits after it (`0.3.0+4.g1a2b3c4d5e6f`), which sorts
    /// after the release and before the next one for dpkg and apt (for SemVer the part after `+`
    /// is build metadata). scripts/install and the Debian package name it; a plain `swift build`
    /// reports ``release``.
    public static let current: String = {
        let build = String(cString: errorbus_build_version())
        return build.isEmpty ? release : build
    }()
}
