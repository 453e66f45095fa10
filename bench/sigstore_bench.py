#!/usr/bin/env python3
"""Signature verification: kernelhub against sigstore-python, and what signatures add to a
warm hand-out of kernelhubd. Offline, on loopback, with the throw-away Sigstore instance of
tests/trust/sigstore/ (the same checks run as against the production root).

  * one variant's metadata.json + bundle (Rekor v1, as kernels-community's CI signs):
    median in-process verification time, kernelhub (kh_sigstore_verify) vs sigstore-python's
    API (Verifier.verify_artifact), both with the trusted root already loaded, and "full"
    with the trusted root read and parsed too (what a one-off verification pays, and what
    kernels' verify_variant pays per call);
  * the judgement of a verified receipt by the policy (what each hand-out adds), in-process;
  * kernelhubd warm fetch p50 of the signed kernel, [signatures] off against enforce (a
    receipt judged at every hand-out), alternated.

Goals (issue 10): >= 20x faster than sigstore-python; a warm hand-out with a receipt adds
< 10 us.   Run:  .venv/bin/python bench/sigstore_bench.py   (see bench/README.md)
"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "bench"))
sys.path.insert(0, str(REPO_ROOT / "tests" / "trust" / "sigstore"))
import daemon_bench  # noqa: E402
import test_signer  # noqa: E402

REPO = "kernels-community/relu"


def python_timing(root: Path, artifact: bytes, bundle: bytes, runs: int) -> dict:
    from sigstore.models import Bundle, TrustedRoot
    from sigstore.verify import Verifier, policy

    kc = "https://github.com/huggingface/kernels-community"
    pol = policy.AllOf([
        policy.OIDCIssuer("https://token.actions.githubusercontent.com"),
        policy.OIDCIssuerV2("https://token.actions.githubusercontent.com"),
        policy.OIDCSourceRepositoryURI(kc),
        policy.AnyOf([policy.OIDCBuildSignerURI(f"{kc}/.github/workflows/build.yaml@refs/heads/main")]),
    ])
    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(root)))

    def verify():
        verifier.verify_artifact(artifact, Bundle.from_json(bundle), pol)

    def full():
        Verifier(trusted_root=TrustedRoot.from_file(str(root))).verify_artifact(
            artifact, Bundle.from_json(bundle), pol)

    out = {}
    for name, body in (("verify_ns", verify), ("full_ns", full)):
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter_ns()
            body()
            samples.append(time.perf_counter_ns() - t0)
        out[name] = statistics.median(samples)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", type=Path, default=REPO_ROOT / "build")
    p.add_argument("--runs", type=int, default=300, help="verifications timed per side")
    p.add_argument("--seconds", type=float, default=2.0, help="duration of each warm run")
    p.add_argument("--rounds", type=int, default=3, help="alternated warm rounds per policy")
    p.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    p.add_argument("--smoke", action="store_true",
                    help="a quick run that checks the benchmark works and prints its table, not "
                         "its figures (ctest bench.sigstore_smoke)")
    args = p.parse_args()
    if args.smoke:
        args.runs, args.seconds, args.rounds = 5, 0.2, 1
    bindir = args.build / "bin"
    for b in ("kernelhub", "kernelhubd", "kh_daemon_loadgen", "kh_sigstore_verify"):
        if not (bindir / b).exists():
            sys.exit(f"missing {bindir / b}: build it first (scripts/build.sh)")
    args.loadgen = bindir / "kh_daemon_loadgen"
    work = Path(tempfile.mkdtemp(prefix="kh-sigstore-bench-"))
    procs = []
    try:
        keys = work / "keys"
        test_signer.init(keys)
        root = keys / "trusted_root.json"
        tree = work / "relu-signed"
        shutil.copytree(args.build / "fixtures" / "src" / "relu-v1", tree)
        variant = sorted(p.name for p in (tree / "build").iterdir())[0]
        metadata = tree / "build" / variant / "metadata.json"
        test_signer.sign_file(keys, metadata, metadata.with_name("metadata.json.sigstore"))
        bundle = metadata.with_name("metadata.json.sigstore")

        # 1. Verification of one variant, in-process, both sides in this run.
        cpp = json.loads(subprocess.run(
            [str(bindir / "kh_sigstore_verify"), str(root), str(bundle), str(metadata), str(args.runs)],
            check=True, capture_output=True, text=True).stdout)
        if not cpp["ok"]:
            sys.exit("kh_sigstore_verify did not verify the bundle")
        py = python_timing(root, metadata.read_bytes(), bundle.read_bytes(), args.runs)

        # 2. Warm hand-outs of the signed kernel: [signatures] off against enforce.
        store = work / "store"
        shutil.copytree(args.build / "fixtures" / "hub", store)
        subprocess.run([str(bindir / "kernelhub"), "publish", "--root", str(store), "--repo", REPO,
                        "--branch", "v1", str(tree)], check=True, capture_output=True)
        serve, endpoint = daemon_bench.start_serve(bindir, store, work)
        procs.append(serve)
        daemons = {}
        for mode in ("off", "enforce"):
            policy = work / f"policy-{mode}.toml"
            policy.write_text(f'[signatures]\nmode = "{mode}"\ntrusted_root = "{root}"\n')
            daemons[mode] = daemon_bench.Daemon(bindir / "kernelhubd", work, mode, endpoint,
                                                ["--policy", str(policy)])
            procs.append(daemons[mode].proc)
            daemon_bench.loadgen(args, daemons[mode], 1, 0, variant)  # the cold fetch
        p50 = {"off": [], "enforce": []}
        for _ in range(args.rounds):
            for mode in ("off", "enforce"):
                p50[mode].append(daemon_bench.loadgen(args, daemons[mode], 1, args.seconds, variant)["p50_us"])
        for d in daemons.values():
            d.stop()
    finally:
        daemon_bench.stop_all(procs, work)

    ratio_verify = py["verify_ns"] / cpp["verify_ns"]
    ratio_full = py["full_ns"] / cpp["full_ns"]
    off, enforce = statistics.median(p50["off"]), statistics.median(p50["enforce"])
    added_us = enforce - off
    print("| measurement | kernelhub | sigstore-python | ratio |")
    print("|---|---|---|---|")
    print(f"| verify one variant (root loaded) | {cpp['verify_ns'] / 1e3:.0f} us | {py['verify_ns'] / 1e3:.0f} us "
          f"| {ratio_verify:.2f}x |")
    print(f"| verify one variant (root read too) | {cpp['full_ns'] / 1e3:.0f} us | {py['full_ns'] / 1e3:.0f} us "
          f"| {ratio_full:.2f}x |")
    print(f"| judge a receipt (per hand-out) | {cpp['decide_ns']:.0f} ns | - | - |")
    print(f"| kernelhubd warm fetch p50, off / enforce | {off:.0f} / {enforce:.0f} us | - | "
          f"+{added_us:.1f} us |")
    print(f"rounds: off {[round(x) for x in p50['off']]}, enforce {[round(x) for x in p50['enforce']]}")
    missed = []
    if ratio_verify < 20:
        missed.append(f"verification {ratio_verify:.2f}x faster than sigstore-python (goal 20x)")
    if added_us >= 10:
        missed.append(f"a warm hand-out with a receipt adds {added_us:.1f} us (goal < 10 us)")
    for line in missed:
        print(f"goal missed: {line}")
    return 1 if (missed and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
