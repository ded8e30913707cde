#!/usr/bin/env python3
"""Checks that each library product declares something public: that a package depending on it
can use it at all.

swift-api-digester, which scripts/check-api compares the API with, records internal and `package`
declarations beside public ones. A product whose every declaration is internal or `package`
therefore builds, compares equal to its baseline, and is of no use to anyone: a dependent gets
"cannot find 'X' in scope" for each of its types. This reads the symbol graphs that
`swift package dump-symbol-graph` writes (public declarations only, its default): the module's
own (MODULE.symbols.json) and its extensions of other modules' types (MODULE@OTHER.symbols.json),
and fails naming each module that has none.

Usage: exports.py SYMBOL-GRAPH-DIRECTORY MODULE...
"""
import json
import pathlib
import sys

PUBLIC = {"public", "open"}


def public_symbols(directory, module):
    """The public symbols of `module`, as (kind, path) pairs; None when it has no symbol graph."""
    graphs = [directory / f"{module}.symbols.json", *sorted(directory.glob(f"{module}@*.symbols.json"))]
    if not graphs[0].exists():
        return None
    symbols = set()
    for graph in graphs:
        for symbol in json.loads(graph.read_text()).get("symbols", []):
            if symbol.get("accessLevel") in PUBLIC:
                symbols.add((symbol["kind"]["identifier"], ".".join(symbol.get("pathComponents", []))))
    return symbols


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    directory = pathlib.Path(sys.argv[1])
    failed = False
    for module in sys.argv[2:]:
        symbols = public_symbols(directory, module)
        if symbols is None:
            print(f"check-api: no symbol graph for {module} in {directory}", file=sys.stderr)
            failed = True
        elif not symbols:
            print(
                f"check-api: {module} declares nothing public: a package depending on the product {module} "
                "can use none of it, as every declaration is internal or package. "
                "Make its API public (and say so in CHANGELOG.md), or take it out of the products checked.",
                file=sys.stderr,
            )
            failed = True
        else:
            types = sum(1 for kind, _ in symbols if kind in {"swift.struct", "swift.class", "swift.enum", "swift.protocol", "swift.actor", "swift.typealias"})
            print(f"{module}: {len(symbols)} public declarations ({types} types)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
