#ifndef ERRORBUS_CBUILDVERSION_SHIM_H
#define ERRORBUS_CBUILDVERSION_SHIM_H

// The version of this build, when the build names one: scripts/install (and so the Debian
// package) passes it as -Xcc -DERRORBUS_BUILD_VERSION='"0.3.0+4.g1a2b3c4d5e6f"', computed by
// scripts/lib/build-version from the last release and the commits since. Any other build
// leaves it empty and reports the release its source is or follows.
//
// A function, not the macro itself: Swift imports the macros a module's headers define, not
// those of the command line. Header-only: nothing to link.
#ifndef ERRORBUS_BUILD_VERSION
#define ERRORBUS_BUILD_VERSION ""
#endif

static inline const char *errorbus_build_version(void) {
    return ERRORBUS_BUILD_VERSION;
}

#endif
