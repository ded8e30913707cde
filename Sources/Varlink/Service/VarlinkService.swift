/// `org.varlink.service`: the interface every Varlink service implements, which describes the
/// service and its interfaces (https://varlink.org/Service). ``VarlinkRouter`` implements it.
///
/// Its errors are the protocol's standard errors, which any handler may throw too:
/// `throw VarlinkService.permissionDenied.error()`.
public enum VarlinkService {
    /// `org.varlink.service`
    public static let interfaceName = "org.varlink.service"

    /// What `GetInfo` returns.
    public struct Info: Codable, Sendable, Hashable {
        /// Who made the service.
        public var vendor: String
        /// The product implementing the service.
        public var product: String
        /// The product's version.
        public var version: String
        /// Where to read about it.
        public var url: String
        /// The interfaces the service implements, `org.varlink.service` first.
        public var interfaces: [String]

        /// Creates the information about a service.
        public init(vendor: String, product: String, version: String, url: String, interfaces: [String] = []) {
            self.vendor = vendor
            self.product = product
            self.version = version
            self.url = url
            self.interfaces = interfaces
        }
    }

    /// The parameters of `GetInterfaceDescription`.
    public struct InterfaceName: Codable, Sendable, Hashable {
        /// An interface's name.
        public var interface: String
        /// Creates the parameters.
        public init(interface: String) { self.interface = interface }
    }

    /// The reply of `GetInterfaceDescription`.
    public struct InterfaceDescription: Codable, Sendable, Hashable {
        /// The interface definition, in Varlink's IDL.
        public var description: String
        /// Creates the reply.
        public init(description: String) { self.description = description }
    }

    /// The parameters of `MethodNotFound` and `MethodNotImplemented`.
    public struct MethodName: Codable, Sendable, Hashable {
        /// The method's fully qualified name.
        public var method: String
        /// Creates the parameters.
        public init(method: String) { self.method = method }
    }

    /// The parameters of `InvalidParameter`.
    public struct ParameterName: Codable, Sendable, Hashable {
        /// The name of the parameter that is missing, of the wrong type, or unknown.
        public var parameter: String
        /// Creates the parameters.
        public init(parameter: String) { self.parameter = parameter }
    }

    /// `GetInfo`
    public static let getInfo = VarlinkMethod<VarlinkEmpty, Info>(
        interface: interfaceName,
        name: "GetInfo",
        documentation: "Get a list of all the interfaces a service provides and information\nabout the implementation."
    )

    /// `GetInterfaceDescription`
    public static let getInterfaceDescription = VarlinkMethod<InterfaceName, InterfaceDescription>(
        interface: interfaceName,
        name: "GetInterfaceDescription",
        documentation: "Get the description of an interface that is implemented by this service."
    )

    /// `InterfaceNotFound`: the call names an interface the service does not implement.
    public static let interfaceNotFound = VarlinkErrorDeclaration<InterfaceName>(
        interface: interfaceName,
        name: "InterfaceNotFound",
        documentation: "The requested interface was not found."
    )

    /// `MethodNotFound`: the interface has no such method.
    public static let methodNotFound = VarlinkErrorDeclaration<MethodName>(
        interface: interfaceName,
        name: "MethodNotFound",
        documentation: "The requested method was not found"
    )

    /// `MethodNotImplemented`: the interface declares the method but the service does not
    /// implement it.
    public static let methodNotImplemented = VarlinkErrorDeclaration<MethodName>(
        interface: interfaceName,
        name: "MethodNotImplemented",
        documentation: "The interface defines the requested method, but the service does not\nimplement it."
    )

    /// `InvalidParameter`: a parameter is missing, of the wrong type, or unknown.
    public static let invalidParameter = VarlinkErrorDeclaration<ParameterName>(
        interface: interfaceName,
        name: "InvalidParameter",
        documentation: "One of the passed parameters is invalid."
    )

    /// `PermissionDenied`: the caller may not call this method.
    public static let permissionDenied = VarlinkErrorDeclaration<VarlinkEmpty>(
        interface: interfaceName,
        name: "PermissionDenied",
        documentation: "Permission is denied."
    )

    /// `ExpectedMore`: the method only answers calls that set `more`.
    public static let expectedMore = VarlinkErrorDeclaration<VarlinkEmpty>(
        interface: interfaceName,
        name: "ExpectedMore",
        documentation: "Method is expected to be called with 'more' set to true, but wasn't."
    )

    /// The interface's declaration.
    static let interface: VarlinkInterface = {
        do {
            return try VarlinkInterface(
                name: interfaceName,
                documentation: "The Varlink Service Interface is provided by every varlink service. It\ndescribes the service and the interfaces it implements.",
                members: [
                    .method(getInfo), .method(getInterfaceDescription),
                    .error(interfaceNotFound), .error(methodNotFound), .error(methodNotImplemented),
                    .error(invalidParameter), .error(permissionDenied), .error(expectedMore),
                ]
            )
        } catch {
            // The declaration above is fixed; the tests parse its definition.
            fatalError("org.varlink.service is declared wrongly: \(error)")
        }
    }()
}
