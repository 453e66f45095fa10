#!/usr/bin/env python3
"""Runs one benchmark in its --smoke mode for ctest (bench.<name>_smoke): the benchmark must
exit 0, print no FAILED row, and print every line its table is known by. The figures are not
judged: a smoke run only keeps a benchmark from rotting unseen.

Usage: run_smoke.py SCRIPT 'REGEX' ['REGEX'...] -- [benchmark arguments]
"""
import re
import subprocess
import sys


def main() -> int:
    split = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
    script, patterns, extra = sys.argv[1], sys.argv[2:split], sys.argv[split + 1:]
    proc = subprocess.run([sys.executable, script, "--smoke", *extra], capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr[-4000:])
    problems = []
    if proc.returncode != 0:
        problems.append(f"exit status {proc.returncode}")
    if re.search(r"\bFAILED\b", proc.stdout):
        problems.append("a FAILED row")
    problems += [f"no line matching {p!r}" for p in patterns if not re.search(p, proc.stdout, re.M)]
    for problem in problems:
        print(f"bench smoke {script}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
