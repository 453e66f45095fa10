#!/usr/bin/env python3
"""Fails on a Catch2 TEST_CASE name ctest cannot run whole.

catch_discover_tests turns each case into a ctest entry named after it, and a ';' in that name
is a CMake list separator: the entry then filters for the text before it, matches no case, and
passes without running anything. Names must avoid ';' ('[' and ',' are escaped and run).

Usage: check_test_names.py SOURCE_DIR [FILE...]   (FILE: check these instead of tests/**)
Exit status: 0 clean, 1 a bad name (each printed with its file and line).
"""
import re
import sys
from pathlib import Path

NAME = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"', re.MULTILINE)


def main() -> int:
    root = Path(sys.argv[1])
    files = [Path(f) for f in sys.argv[2:]] or sorted((root / "tests").rglob("*.cpp"))
    bad = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in NAME.finditer(text):
            name = match.group(1)
            if ";" in name:
                line = text.count("\n", 0, match.start()) + 1
                print(f"{path}:{line}: test name {name!r} holds ';': ctest would run none of it")
                bad += 1
    if bad:
        print(f"test names: FAILED: {bad} name(s) ctest cannot run")
        return 1
    print(f"test names: {len(files)} files, every TEST_CASE name runs under ctest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
