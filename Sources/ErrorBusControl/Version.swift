/// errorbus's version, as `errorbusd --version`, `errorbusctl --version` and the control
/// interface's `GetInfo` tell it.
public enum ErrorBusVersion {
    public static let current = "0.2.0"
}
