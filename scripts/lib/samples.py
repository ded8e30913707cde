#!/usr/bin/env python3
"""Checks that every Swift code block of the README and the DocC articles is code that compiles.

A block is quoted from a compiled file (an example package, a test) where the lines between
`// sample: NAME` and `// end sample` are its text. In Markdown the block follows the comment
`<!-- sample: NAME -->`; its text must equal the sample's lines with their common indentation
removed. A fragment of a package manifest, which names errorbus by its public URL, follows
`<!-- manifest -->` instead, and must name the version the CHANGELOG last released. A Swift block
without either comment, a name no file defines, or a quote that differs from
its sample is an error: the text shown to readers is the text the test command compiles.

Usage: samples.py ROOT
"""
import difflib
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
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


def main():
    found, errors = samples()
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
