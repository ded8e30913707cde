/// The daemon's version, as `errorbusd --version` prints it.
public enum ErrorBusVersion {
    public static let current = "0.1.0"
}
