#!/usr/bin/env python3
"""Checks that every Swift code block of the README and the DocC articles is code that compiles.

A block is quoted from a compiled file (an example package, a test) where the lines between
`// sample: NAME` and `// end sample` are its text. In Markdown the block follows the comment
`<!-- sample: NAME -->`; its text must equal the sample's lines with their common indentation
removed. A fragment of a package manifest, which names errorbus by its public URL, follows
`<!-- manifest -->` instead, and must name the version the CHANGELOG last released. A Swift block
without either comment, a name no file defines, or a quote that differs from
its sample is an error: the text shown to readers is the text the test command compiles.

A reader copies a sample into a package of their own, which may import every library of
errorbus. So a type the examples declare must not bear the name of a library's public type (the
sample would mean the library's in that package), and with `--compile SCRATCH` the example
packages' sources are built once more as one package in SCRATCH that depends on every product
(ErrorBus, ErrorBusHTTP, ErrorBusTesting, Varlink), every file importing all four, in plain Swift 6
language mode without the upcoming features the examples enable.

Usage: samples.py ROOT [--compile SCRATCH]
"""
import difflib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
LIBRARIES = ["ErrorBus", "ErrorBusHTTP", "ErrorBusTesting", "Varlink"]
# A type declared at the top level of a file (the libraries': public ones).
TYPE = re.compile(r"^(public |package |internal |fileprivate |private )?(final )?(struct|class|enum|actor|protocol|typealias) ([A-Za-z_][A-Za-z0-9_]*)", re.M)
SOURCES = ["Examples", "Tests", "Sources"]
MARKDOWN = ["README.md", "Sources/*/*.docc/*.md", "Examples/*/README.md"]

BEGIN = re.compile(r"^\s*// sample: ([a-z0-9-]+)\s*$")
END = re.compile(r"^\s*// end sample\s*$")
QUOTE = re.compile(r"^<!-- sample: ([a-z0-9-]+) -->\s*$")
MANIFEST = "<!-- manifest -->"
RELEASED = re.compile(r"^## \[?(\d+\.\d+\.\d+)\]? ", re.M)


def samples():
    found = {}
    errors = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.swift")):
            if any(part.startswith(".build") for part in path.parts):
                continue
            name, lines = None, []
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if name is None:
                    match = BEGIN.match(line)
                    if match:
                        name, lines, start = match.group(1), [], number
                elif END.match(line):
                    if name in found:
                        errors.append(f"{path.relative_to(ROOT)}:{start}: sample {name} is defined twice")
                    found[name] = (textwrap.dedent("\n".join(lines)).strip("\n"), f"{path.relative_to(ROOT)}:{start}")
                    name = None
                else:
                    lines.append(line)
            if name is not None:
                errors.append(f"{path.relative_to(ROOT)}:{start}: sample {name} has no '// end sample'")
    return found, errors


def clashes():
    """Types of the examples named as a library's public type."""
    public = {}
    for library in LIBRARIES:
        for path in sorted((ROOT / "Sources" / library).rglob("*.swift")):
            for match in TYPE.finditer(path.read_text()):
                if match.group(1) == "public ":
                    public.setdefault(match.group(4), library)
    errors = []
    for path in sorted((ROOT / "Examples").rglob("*.swift")):
        if any(part.startswith(".build") for part in path.parts) or path.name == "Package.swift":
            continue
        text = path.read_text()
        for match in TYPE.finditer(text):
            name = match.group(4)
            if name in public:
                line = text.count("\n", 0, match.start()) + 1
                errors.append(
                    f"{path.relative_to(ROOT)}:{line}: declares {name}, as {public[name]} does: in a package that "
                    f"imports {public[name]}, a sample naming {name} would mean the library's; rename it"
                )
    return errors


def imports_all(text):
    """`text` with an import of each library it does not import yet, before its first line."""
    missing = [
        library for library in LIBRARIES
        if not re.search(rf"^\s*(@testable |public |package |internal )*import {library}\s*$", text, re.M)
    ]
    return "".join(f"import {library}\n" for library in missing) + text


def compile_with_every_product(scratch):
    """Builds the examples' targets as one package that depends on every product."""
    scratch = pathlib.Path(scratch).resolve()
    shutil.rmtree(scratch / "Targets", ignore_errors=True)
    dependencies = {}
    targets = []
    for manifest in sorted((ROOT / "Examples").glob("*/Package.swift")):
        example = manifest.parent
        dump = json.loads(subprocess.run(
            ["swift", "package", "dump-package", "--package-path", str(example)],
            check=True, capture_output=True, text=True,
        ).stdout)
        for dependency in dump["dependencies"]:
            if "sourceControl" in dependency:
                remote = dependency["sourceControl"][0]
                lower = remote["requirement"]["range"][0]["lowerBound"]
                url = remote["location"]["remote"][0]["urlString"]
                if url not in dependencies or dependencies[url] < lower:
                    dependencies[url] = lower
        for target in dump["targets"]:
            kind = {"test": "testTarget", "executable": "executableTarget", "regular": "target"}[target["type"]]
            source = example / (target.get("path") or f"{'Tests' if kind == 'testTarget' else 'Sources'}/{target['name']}")
            copy = scratch / "Targets" / target["name"]
            for path in sorted(source.rglob("*.swift")):
                destination = copy / path.relative_to(source)
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_text(imports_all(path.read_text()))
            names = []
            for dependency in target["dependencies"]:
                if "byName" in dependency or "target" in dependency:
                    names.append(f'"{(dependency.get("byName") or dependency["target"])[0]}"')
                elif dependency["product"][1] != ROOT.name.lower():
                    name, package = dependency["product"][:2]
                    names.append(f'.product(name: "{name}", package: "{package}")')
            names += [f'.product(name: "{library}", package: "{ROOT.name.lower()}")' for library in LIBRARIES]
            targets.append(
                f'        .{kind}(\n            name: "{target["name"]}",\n            dependencies: [\n'
                + "".join(f"                {name},\n" for name in names)
                + f'            ],\n            path: "Targets/{target["name"]}"\n        ),\n'
            )
    manifest = (
        "// swift-tools-version:6.2\n"
        "// Written by scripts/lib/samples.py: the example packages' targets, each depending on every\n"
        "// product of errorbus and importing all of them, in plain Swift 6 (no upcoming features).\n"
        "import PackageDescription\n\n"
        "let package = Package(\n"
        '    name: "samples-with-every-product",\n'
        "    platforms: [.macOS(.v15)],\n"
        "    dependencies: [\n"
        f'        .package(path: "{ROOT}", traits: ["HTTP", "Varlink"]),\n'
        + "".join(f'        .package(url: "{url}", from: "{lower}"),\n' for url, lower in sorted(dependencies.items()))
        + "    ],\n    targets: [\n" + "".join(targets) + "    ]\n)\n"
    )
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "Package.swift").write_text(manifest)
    build = subprocess.run(["swift", "build", "--build-tests", "--package-path", str(scratch)])
    if build.returncode != 0:
        print(f"the examples do not build in a package importing every product ({scratch})", file=sys.stderr)
        return 1
    print(f"the examples, and the samples in them, build in a package importing {', '.join(LIBRARIES)}")
    return 0


def main():
    if "--compile" in sys.argv:
        return compile_with_every_product(sys.argv[sys.argv.index("--compile") + 1])
    found, errors = samples()
    errors += clashes()
    released = RELEASED.search((ROOT / "CHANGELOG.md").read_text())
    version = released.group(1) if released else None
    quoted = set()
    for pattern in MARKDOWN:
        for path in sorted(ROOT.glob(pattern)):
            lines = path.read_text().splitlines()
            pending = None
            index = 0
            while index < len(lines):
                line = lines[index]
                match = QUOTE.match(line)
                if match:
                    pending = (match.group(1), index + 1)
                elif line.strip() == MANIFEST:
                    pending = (MANIFEST, index + 1)
                elif line.strip().lower().startswith("```swift"):
                    indent = len(line) - len(line.lstrip())
                    end = index + 1
                    while end < len(lines) and not lines[end].strip().startswith("```"):
                        end += 1
                    text = "\n".join(l[indent:] for l in lines[index + 1:end])
                    where = f"{path.relative_to(ROOT)}:{index + 1}"
                    if pending is None:
                        errors.append(f"{where}: a Swift block that quotes no sample (precede it with <!-- sample: NAME -->)")
                    elif pending[0] == MANIFEST:
                        for named in re.findall(r'from: "([^"]+)"', text) if "errorbus" in text else []:
                            if named != version:
                                errors.append(f"{where}: names errorbus {named}; the CHANGELOG last released {version}")
                    elif pending[0] not in found:
                        errors.append(f"{where}: no compiled file defines sample {pending[0]}")
                    else:
                        quoted.add(pending[0])
                        expected, source = found[pending[0]]
                        if text != expected:
                            diff = "\n".join(difflib.unified_diff(expected.splitlines(), text.splitlines(), source, where, lineterm=""))
                            errors.append(f"{where}: differs from sample {pending[0]} ({source}):\n{diff}")
                    pending = None
                    index = end
                elif line.strip().startswith("```") and pending is not None:
                    errors.append(f"{path.relative_to(ROOT)}:{index + 1}: sample {pending[0]} is quoted in a block that is not Swift")
                    pending = None
                elif line.strip():
                    pending = None
                index += 1
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        return 1
    print(f"{len(quoted)} samples quoted, each the text of compiled code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
