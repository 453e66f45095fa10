#!/usr/bin/env python3
"""Reference verdicts from sigstore-python for the cases written by make_cases.py.

    sigstore_python_verdict.py CASES_DIR [--trusted-root FILE] [--json OUT]
        [--timing-runs N]

Verifies every case offline with sigstore-python's API (never the network:
the Verifier is built from a trusted_root.json file, not from TUF) and prints
`case<TAB>pass|fail<TAB>reason`. A case's own trusted_root.json overrides
--trusted-root. Exit status is 1 if a verdict differs from `expect`, unless
the case has a `known_difference` file explaining that sigstore-python is the
one that is wrong (those are printed with a "KNOWN DIFFERENCE" note).

Finally prints `timing v03-rekor1 <seconds>`: the median over N in-process
verify_artifact() calls (Bundle parsing and Verifier construction excluded),
the baseline a C++ benchmark compares itself with.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy


def read_line(path: Path) -> str:
    return path.read_text().strip()


def kernels_policy(spec: dict) -> policy.VerificationPolicy:
    """The shape of `kernels`' DEFAULT_POLICIES: issuer (v1 and v2 extensions),
    source repository, and any of the allowed build signer workflows."""
    return policy.AllOf(
        [
            policy.OIDCIssuer(spec["issuer"]),
            policy.OIDCIssuerV2(spec["issuer"]),
            policy.OIDCSourceRepositoryURI(spec["source_repository"]),
            policy.AnyOf([policy.OIDCBuildSignerURI(u) for u in spec["build_signer_uris"]]),
        ]
    )


def case_policy(case: Path) -> policy.VerificationPolicy:
    if (case / "policy.json").exists():
        return kernels_policy(json.loads((case / "policy.json").read_text()))
    return policy.Identity(identity=read_line(case / "identity"),
                           issuer=read_line(case / "issuer"))


def load_case(case: Path, default_root: Path | None):
    """Everything verify_artifact needs; raising here is a verdict too (bad bundle)."""
    root_path = case / "trusted_root.json"
    if not root_path.exists():
        if default_root is None:
            raise SystemExit(f"{case.name}: no trusted_root.json and no --trusted-root")
        root_path = default_root
    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(root_path)))
    return verifier, (case / "artifact").read_bytes(), case_policy(case)


def verdict(case: Path, default_root: Path | None) -> tuple[str, str]:
    verifier, artifact, pol = load_case(case, default_root)
    try:
        bundle = Bundle.from_json((case / "bundle.sigstore.json").read_bytes())
        verifier.verify_artifact(artifact, bundle, pol)
    except BaseException as exc:  # noqa: BLE001 - JSON bombs raise RecursionError & co.
        if isinstance(exc, KeyboardInterrupt):
            raise
        msg = " ".join(str(exc).split())
        return "fail", f"{type(exc).__name__}: {msg[:300]}"
    return "pass", "verified"


def timing(case: Path, default_root: Path | None, runs: int) -> float:
    verifier, artifact, pol = load_case(case, default_root)
    bundle = Bundle.from_json((case / "bundle.sigstore.json").read_bytes())
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        verifier.verify_artifact(artifact, bundle, pol)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", type=Path)
    ap.add_argument("--trusted-root", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write results as JSON")
    ap.add_argument("--timing-runs", type=int, default=50)
    args = ap.parse_args(argv)

    results, mismatches = [], 0
    for case in sorted(p for p in args.cases.iterdir() if (p / "expect").exists()):
        expect = read_line(case / "expect")
        got, reason = verdict(case, args.trusted_root)
        known = case / "known_difference"
        note = ""
        if got != expect:
            if known.exists():
                note = f"KNOWN DIFFERENCE (correct verdict: {expect}): {read_line(known)}"
            else:
                note = f"MISMATCH (expected {expect})"
                mismatches += 1
        elif known.exists():
            note = "known_difference no longer reproduces"
        print(f"{case.name}\t{got}\t{reason}" + (f" -- {note}" if note else ""))
        results.append({"case": case.name, "expect": expect, "sigstore_python": got,
                        "reason": reason, "note": note})

    timed = args.cases / "v03-rekor1"
    seconds = None
    if timed.exists() and args.timing_runs > 0:
        seconds = timing(timed, args.trusted_root, args.timing_runs)
        print(f"timing v03-rekor1 {seconds:.6f}")
    if args.json:
        args.json.write_text(json.dumps(
            {"results": results, "timing": {"v03-rekor1": seconds}}, indent=2) + "\n")
    if mismatches:
        print(f"{mismatches} verdict(s) differ from expect", file=sys.stderr)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
