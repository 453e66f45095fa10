"""Cross-check of kernelhub's Sigstore verifier against sigstore-python (the venv's pinned
sigstore 4.x, in-process API, offline, on the same throw-away trusted root): every case of
tests/trust/sigstore/make_cases.py gets its expected verdict from `kernelhub verify-blob`,
and sigstore-python's verdict equals it except where the case documents a known difference
(sigstore-python accepts what it should not). The table is written to
<build>/sigstore-cross-check.md.
"""

import json
import subprocess
import sys
from pathlib import Path

from conftest import BIN_DIR, KERNELHUB, REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests" / "trust" / "sigstore"))
import make_cases  # noqa: E402
import sigstore_python_verdict  # noqa: E402
import test_signer  # noqa: E402


def kernelhub_verdict(case: Path, root: Path) -> tuple[str, str]:
    args = [str(KERNELHUB), "verify-blob", str(case / "artifact"), "--bundle",
            str(case / "bundle.sigstore.json"), "--trusted-root",
            str(case / "trusted_root.json") if (case / "trusted_root.json").exists() else str(root)]
    if (case / "policy.json").exists():
        spec = json.loads((case / "policy.json").read_text())
        args += ["--certificate-oidc-issuer", spec["issuer"],
                 "--certificate-source-repository", spec["source_repository"]]
        for uri in spec["build_signer_uris"]:
            args += ["--certificate-build-signer-uri", uri]
    else:
        args += ["--certificate-identity", (case / "identity").read_text().strip(),
                 "--certificate-oidc-issuer", (case / "issuer").read_text().strip()]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if out.returncode == 0:
        assert out.stdout.startswith("Verified OK: ") and out.stdout.count("\n") == 1
        return "pass", "verified"
    assert out.returncode == 1, out.stderr  # a verification failure, not a usage error
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr  # the failed check, in one line
    return "fail", lines[0].removeprefix("kernelhub: signature_invalid: ")


def test_kernelhub_and_sigstore_python_agree_on_every_case(tmp_path):
    keys, cases = tmp_path / "keys", tmp_path / "cases"
    test_signer.init(keys)
    assert make_cases.main([str(keys), str(cases)]) == 0
    root = keys / "trusted_root.json"
    rows, disagreements = [], []
    names = sorted(p.name for p in cases.iterdir())
    assert len(names) >= 40
    for name in names:
        case = cases / name
        expect = (case / "expect").read_text().strip()
        ours, our_reason = kernelhub_verdict(case, root)
        theirs, their_reason = sigstore_python_verdict.verdict(case, root)
        known = (case / "known_difference").read_text().strip() if (case / "known_difference").exists() else ""
        if ours != expect:
            disagreements.append(f"{name}: kernelhub says {ours} ({our_reason}), expected {expect}")
        if theirs != expect and not (known and theirs == "pass"):
            disagreements.append(f"{name}: sigstore-python says {theirs} ({their_reason}), expected {expect}")
        if known and theirs == expect:
            disagreements.append(f"{name}: the known difference no longer reproduces")
        rows.append(f"| {name} | {expect} | {ours} | {theirs} | {our_reason[:90]} |"
                    + (f" known: {known[:80]}" if known else ""))
    table = ["| case | expected | kernelhub | sigstore-python | kernelhub's reason |",
             "|---|---|---|---|---|", *rows]
    (BIN_DIR.parent / "sigstore-cross-check.md").write_text("\n".join(table) + "\n")
    assert not disagreements, "\n".join(disagreements)
