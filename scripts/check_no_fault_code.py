#!/usr/bin/env python3
"""Checks that product binaries carry no fault-injection code: no symbol of the test Hub's
fault plan (nm -C: "fault" other than in "default") and none of its strings (the
/_kernelhub/ test endpoints, --fault-* flags, "injected failure"). The test Hub lives in
tests/support/fault_hub; the product's HubServer only offers hooks (serve_hooks.hpp).

usage: check_no_fault_code.py BINARY...   (exit 1 and the findings when any is found)
"""
import re
import subprocess
import sys

SYMBOL = re.compile(r"(?<![dD]e)fault", re.IGNORECASE)
# Reserved names (__sanitizer::..., __asan_...) are the runtimes a sanitizer build links.
RUNTIME = re.compile(r"^_?__(?!GLOBAL__sub_I)")
STRINGS = (b"/_kernelhub/", b"--fault-", b"injected failure", b"InjectedFault")


def findings(binary: str) -> list[str]:
    nm = subprocess.run(["nm", "-C", binary], capture_output=True, text=True, check=True)
    names = [line.split(" ", 2)[-1] for line in nm.stdout.splitlines()]
    found = [f"symbol {name}" for name in names if SYMBOL.search(name) and not RUNTIME.match(name)]
    with open(binary, "rb") as f:
        data = f.read()
    found += [f"string {s.decode()!r}" for s in STRINGS if s in data]
    return found


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for binary in sys.argv[1:]:
        found = findings(binary)
        for item in found[:20]:
            print(f"{binary}: {item}")
        if len(found) > 20:
            print(f"{binary}: ... {len(found) - 20} more")
        bad += bool(found)
    if bad:
        return 1
    print(f"no fault code in {len(sys.argv) - 1} binaries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
