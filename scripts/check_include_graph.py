#!/usr/bin/env python3
"""Checks every project #include against the CMake target graph.

A file may include a header of its own target, or of a target its target links (directly, or
through the INTERFACE_LINK_LIBRARIES of what it links: the targets whose headers CMake puts on
its include path). Anything else is an include the build graph does not allow, most often an
upward one (trust/ including hub/), and fails the check.

Input: <build>/target_graph.json, written at configure time by cmake/TargetGraph.cmake.
Who owns a file: the targets that compile it (or the .cpp of the same name), else every target
with sources in the deepest folder that holds it (a header-only header belongs to its folder).
Files no target owns (third-party, generated) are not checked.

Usage: check_include_graph.py BUILD_DIR [--inject FILE=HEADER ...]
  --inject adds an include that is not in FILE (paths relative to the source tree), to prove
  the check catches it (the ctest include_graph_catches_an_upward_include does).
Exit status: 0 clean, 1 violations (each printed), 2 bad input.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
HEADER_SUFFIXES = (".hpp", ".h")
SOURCE_SUFFIXES = (".cpp", ".cc", ".cu", ".hpp", ".h")
TARGET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_:.+-]*")


def link_names(entries: list[str], known: set[str]) -> set[str]:
    """Project targets named by link entries (generator expressions read as text)."""
    names = set()
    for entry in entries:
        for token in TARGET_NAME.findall(entry):
            if token in known:
                names.add(token)
    return names


def load_graph(build: Path):
    graph = json.loads((build / "target_graph.json").read_text())
    root = Path(graph["source_dir"]).resolve()
    targets = graph["targets"]
    known = set(targets)
    direct = {name: link_names(t["links"], known) for name, t in targets.items()}
    interface = {name: link_names(t["interface"], known) for name, t in targets.items()}
    return root, targets, direct, interface


def visible_targets(name: str, direct, interface) -> set[str]:
    """The targets whose headers `name` may include: itself, what it links, and their interfaces."""
    seen = {name}
    todo = list(direct[name] | interface[name])
    while todo:
        dep = todo.pop()
        if dep in seen:
            continue
        seen.add(dep)
        todo.extend(interface[dep])
    return seen


def owners(root: Path, targets):
    """(file -> targets compiling it), and (folder -> targets with sources there)."""
    by_file: dict[Path, set[str]] = defaultdict(set)
    by_dir: dict[Path, set[str]] = defaultdict(set)
    for name, t in targets.items():
        folder = Path(t["dir"]).resolve()
        by_dir[folder].add(name)
        for source in t["sources"]:
            if "$<" in source:
                continue
            path = Path(source)
            path = (path if path.is_absolute() else folder / path).resolve()
            if path.suffix not in SOURCE_SUFFIXES:
                continue
            try:
                path.relative_to(root)
            except ValueError:
                continue  # generated or third-party
            by_file[path].add(name)
            by_dir[path.parent].add(name)
    return by_file, by_dir


def twin_sources(path: Path) -> list[Path]:
    """The source files a header declares for: beside it, or, for a public header
    (<module>/include/kernelhub/<...>/name.hpp), in its module folder <module>/name.cpp."""
    candidates = [path.with_suffix(s) for s in (".cpp", ".cc", ".cu")]
    parts = path.parts
    if "include" in parts:
        module = Path(*parts[: len(parts) - 1 - parts[::-1].index("include")])
        candidates += [module / path.with_suffix(s).name for s in (".cpp", ".cc", ".cu")]
    return candidates


def owner_of(path: Path, root: Path, by_file, by_dir) -> tuple[set[str], bool]:
    """The targets a file belongs to, and whether it is compiled into each of them: those
    compiling it (or its .cpp), else its folder's (a header-only header, one of them). A public
    header under <module>/include/ belongs to <module>'s targets."""
    if path in by_file:
        return by_file[path], True
    for twin in twin_sources(path):
        if twin in by_file:
            return by_file[twin], True
    folder = path.parent
    while True:
        if folder in by_dir:
            return by_dir[folder], False
        if folder == root or folder.parent == folder:
            return set(), False
        folder = folder.parent


# The fixture kernels stand for third-party kernel repos (their own torch-ext layout, built
# by the kernel-builder's rules), not for the project's code: their includes are theirs.
OUTSIDE_CODE = ("tests/fixtures/",)


def is_outside_code(path: Path, root: Path) -> bool:
    return str(path.relative_to(root)).startswith(OUTSIDE_CODE)


def include_roots(root: Path, by_dir) -> list[Path]:
    """Every public include folder of the project's targets (<module>/include), the tests'
    helper root and the source root: an include is resolved against all of them, so that an
    include the compiler would refuse (no such folder on the target's path) is still named
    and checked here against the graph."""
    roots = sorted({folder / "include" for folder in by_dir if (folder / "include").is_dir()})
    return roots + [root / "tests", root]


def resolve(include: str, including: Path, bases: list[Path]) -> Path | None:
    for base in [including.parent, *bases]:
        candidate = (base / include).resolve()
        if candidate.is_file():
            return candidate
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path)
    parser.add_argument("--inject", action="append", default=[], metavar="FILE=HEADER")
    args = parser.parse_args()
    try:
        root, targets, direct, interface = load_graph(args.build)
    except (OSError, KeyError, json.JSONDecodeError) as e:
        print(f"include graph: cannot read {args.build}/target_graph.json: {e}", file=sys.stderr)
        return 2
    by_file, by_dir = owners(root, targets)
    injected = defaultdict(list)
    for item in args.inject:
        file, _, header = item.partition("=")
        injected[(root / file).resolve()].append(header)

    # Every file a target owns: its sources, and the headers in its folders and their include/.
    files = set(by_file)
    for folder in by_dir:
        files.update(p.resolve() for p in folder.glob("*") if p.suffix in HEADER_SUFFIXES)
        files.update(p.resolve() for p in folder.glob("include/**/*") if p.suffix in HEADER_SUFFIXES)
    bases = include_roots(root, by_dir)
    violations = []
    checked = 0
    for path in sorted(files):
        mine, compiled = owner_of(path, root, by_file, by_dir)
        if not mine or not path.is_file() or is_outside_code(path, root):
            continue
        # A file compiled into several targets (a shared test source) must suit each of them;
        # a header-only header, one of the targets of its folder.
        text = path.read_text(errors="replace")
        lines = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(text)]
        lines += [(0, header) for header in injected.get(path, [])]
        for line, include in lines:
            header = resolve(include, path, bases)
            if header is None:
                continue
            checked += 1
            theirs, _ = owner_of(header, root, by_file, by_dir)
            if not theirs:
                continue
            allowed = {target: bool(theirs & visible_targets(target, direct, interface))
                       for target in mine}
            if not compiled and any(allowed.values()):
                continue
            for target in sorted(t for t, ok in allowed.items() if not ok):
                where = (f"{path.relative_to(root)}:{line}" if line
                         else f"{path.relative_to(root)} (injected)")
                violations.append(f"{where}: {target} includes \"{include}\" of "
                                  f"{' or '.join(sorted(theirs))}, which {target} does not link")
    for v in violations:
        print(f"include graph: {v}")
    if violations:
        print(f"include graph: FAILED: {len(violations)} include(s) outside the target graph "
              "(link the target, or move the code down to a target both may use)")
        return 1
    print(f"include graph: {checked} includes of {len(targets)} targets follow the link graph")
    return 0


if __name__ == "__main__":
    sys.exit(main())
