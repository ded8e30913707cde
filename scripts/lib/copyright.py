#!/usr/bin/env python3
"""Checks that debian/copyright names every package linked into errorbusd and errorbusctl.

  scripts/lib/copyright.py [--build .build-static] [--copyright debian/copyright]

The programs link, statically, the Swift runtime and the Swift packages their targets depend on
(SwiftPM checks them out under BUILD/checkouts). Which packages those are is read from the link
itself: each program's list of object files (BUILD/release/PROGRAM.product/Objects.LinkFileList)
names the target of each object (`…/NIOCore.build/…`), and each target belongs to one checkout
(its directory under the checkout) or to this repository. debian/copyright must have a `Files:`
paragraph for each checkout (`.build-static/checkouts/NAME/*`) and none for a package that is
not linked; the Swift toolchain's runtime, linked by the compiler driver rather than named in the
list, has its own paragraph. Exits 1 naming what is missing or superfluous. Run by debian/rules
after the build, so that a new dependency cannot be packaged without its licence.
"""
import argparse, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAMS = ("errorbusd", "errorbusctl")
TARGET = re.compile(r"/([^/]+)\.build/")


def targets_of_checkouts(checkouts):
    """target directory name -> checkout name, for every directory below each checkout's
    Sources (and any other top-level source directory a manifest names with `path:`)."""
    owner = {}
    for package in sorted(os.listdir(checkouts)):
        base = os.path.join(checkouts, package)
        for directory, subdirectories, _ in os.walk(base):
            subdirectories[:] = [d for d in subdirectories if not d.startswith(".") and d not in ("Tests", "Benchmarks", "Examples")]
            if directory.count(os.sep) - base.count(os.sep) > 3:
                subdirectories[:] = []
            owner.setdefault(os.path.basename(directory), package)
    return owner


def linked_packages(build):
    checkouts = os.path.join(build, "checkouts")
    owner = targets_of_checkouts(checkouts)
    ours = {entry for entry in os.listdir(os.path.join(ROOT, "Sources"))}
    packages, unknown = set(), set()
    for program in PROGRAMS:
        listing = os.path.join(build, "release", program + ".product", "Objects.LinkFileList")
        with open(listing) as file:
            for line in file:
                match = TARGET.search(line)
                if not match:
                    continue
                target = match.group(1)
                if target in ours:
                    continue
                # A Swift target's own list of its sources names its checkout (a target's name
                # need not be its directory's: SystemPackage is swift-system's Sources/System).
                sources = os.path.join(build, "release", target + ".build", "sources")
                checkout = source_checkout(sources, checkouts) if os.path.exists(sources) else None
                if checkout:
                    packages.add(checkout)
                elif target in owner:
                    packages.add(owner[target])
                else:
                    unknown.add(target)
    return packages, unknown


def source_checkout(sources, checkouts):
    """The checkout the first file of a target's sources list is in, or None."""
    prefix = os.path.realpath(checkouts) + os.sep
    with open(sources) as file:
        for line in file:
            path = os.path.realpath(line.strip())
            if path.startswith(prefix):
                return path[len(prefix):].split(os.sep, 1)[0]
            return None
    return None


def copyright_packages(path):
    """The checkouts debian/copyright has a Files: paragraph for."""
    named = set()
    for line in open(path):
        if line.startswith("Files:"):
            for pattern in line.split()[1:]:
                match = re.match(r"\.build-static/checkouts/([^/]+)/", pattern)
                if match:
                    named.add(match.group(1))
    return named


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, ".build-static"))
    parser.add_argument("--copyright", default=os.path.join(ROOT, "debian/copyright"))
    arguments = parser.parse_args()
    linked, unknown = linked_packages(arguments.build)
    named = copyright_packages(arguments.copyright)
    problems = []
    if unknown:
        problems.append("objects of targets no checkout has: %s" % ", ".join(sorted(unknown)))
    if linked - named:
        problems.append("linked but not in debian/copyright: %s" % ", ".join(sorted(linked - named)))
    if named - linked:
        problems.append("in debian/copyright but not linked: %s" % ", ".join(sorted(named - linked)))
    if problems:
        sys.exit("copyright: " + "; ".join(problems))
    print("copyright: debian/copyright names the %d packages linked: %s" % (len(linked), ", ".join(sorted(linked))))


if __name__ == "__main__":
    main()
