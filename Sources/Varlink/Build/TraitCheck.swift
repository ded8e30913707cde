// SwiftPM defines each enabled package trait as a compilation condition in the package's own
// targets (SE-0450). Without the trait `Varlink`, this target's dependencies (SwiftNIO) are left
// out and its imports fail; this says why. The compiler stops at the first file whose import
// fails and SwiftPM passes the files sorted by path, so this one lives where it sorts first.
#if !Varlink
#error("The Varlink library needs the package trait Varlink: .package(url: …, traits: [\"Varlink\"])")
#endif
