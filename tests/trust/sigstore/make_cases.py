#!/usr/bin/env python3
"""Write Sigstore bundle verification cases: make_cases.py KEYDIR OUTDIR.

One folder per case: artifact, bundle.sigstore.json, identity, issuer, expect
(pass|fail), about, and optionally policy.json (kernels-style policy instead of
identity+issuer), trusted_root.json (overrides KEYDIR's) and known_difference
(why sigstore-python's verdict differs from `expect`, which is the correct one).

Each negative case changes exactly one thing; whatever else it touches is
re-signed so that it stays valid (e.g. a tampered signature is also what the log
recorded, a moved integratedTime gets a fresh SET). Cases are minted fresh:
the leaf certificates only live 10 minutes, so verify right after generating.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import random
import sys
from pathlib import Path

import rfc8785
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, str(Path(__file__).resolve().parent))
import signer_log as tlog  # noqa: E402
import signer_pki as pki  # noqa: E402
import test_signer as ts  # noqa: E402

ARTIFACT = json.dumps(
    {"name": "relu", "version": 1, "python-depends": [],
     "digest": {"algorithm": "sha256", "files": {"__init__.py": "q83vEjRWeJA="}}},
    indent=2,
).encode() + b"\n"
OTHER_ARTIFACT = ARTIFACT.replace(b"relu", b"evil")

GH = "https://github.com"
KC = f"{GH}/huggingface/kernels-community"
KERNELS_POLICY = {
    "issuer": ts.DEFAULT_ISSUER,
    "source_repository": KC,
    "build_signer_uris": [
        f"{KC}/.github/workflows/{w}.yaml@refs/heads/main"
        for w in ("build", "build-mac", "build-windows", "sign-old-builds")
    ],
}
MiB = 1 << 20

CASES: dict = {}  # name -> (expect, about, builder(Instance) -> bundle [, extras])


def case(name: str, expect: str, about: str):
    def register(fn):
        CASES[name] = (expect, about, fn)
        return fn
    return register


def entry(bundle: dict) -> dict:
    return bundle["verificationMaterial"]["tlogEntries"][0]


def flip_bit(b64text: str, byte: int = -1) -> str:
    raw = bytearray(base64.b64decode(b64text))
    raw[byte] ^= 0x01
    return tlog.b64(bytes(raw))


def proof_parts(e: dict) -> tuple[int, bytes]:
    p = e["inclusionProof"]
    return int(p["treeSize"]), base64.b64decode(p["rootHash"])


# --------------------------------------------------------------------------- plain signing
# Cases that are one sign() call: name -> (expect, about, sign options). An
# option "hours" sets the leaf's notBefore relative to now; "policy" selects the
# kernels-style policy instead of identity+issuer.
EVIL = f"{GH}/attacker/kernels-community"
SIMPLE = {
    "v03-rekor1": ("pass", "bundle v0.3, Rekor v1 entry with SET, no TSA", {}),
    "v03-rekor1-tsa": ("pass", "bundle v0.3, Rekor v1 entry with SET plus an RFC 3161 timestamp",
                       {"tsa": True}),
    "v03-rekor2-tsa": ("pass", "bundle v0.3, Rekor v2 hashedrekord 0.0.2, Ed25519 checkpoint, "
                       "TSA time", {"rekor": "v2"}),
    "v02-rekor1": ("pass", "bundle v0.2 (x509CertificateChain), Rekor v1 with SET",
                   {"bundle_version": "0.2"}),
    "v01-rekor1": ("pass", "bundle v0.1 (x509CertificateChain), Rekor v1 with SET",
                   {"bundle_version": "0.1"}),
    "kernels-policy-pass": ("pass", "kernels-community build.yaml identity, kernels policy",
                            {"policy": True}),
    "kernels-policy-pass-mac": ("pass", "build-mac.yaml signer: accepted by the policy's AnyOf "
                                "over signer URIs", {"policy": True, "identity":
                                KERNELS_POLICY["build_signer_uris"][1]}),
    "signature-bitflip": ("fail", "artifact signature has one bit flipped (and was logged and "
                          "timestamped that way)", {"tamper_signature": lambda s: s[:-1] +
                                                    bytes([s[-1] ^ 1])}),
    "other-ca": ("fail", "leaf issued by an unrelated CA that is not in the trusted root "
                 "(its SCT is genuine)", {"ca": "other_ca"}),
    "cert-expired": ("fail", "10-minute leaf validity ended ~110 min before the integrated time "
                     "and the TSA time", {"tsa": True, "hours": -2}),
    "cert-not-yet-valid": ("fail", "leaf validity starts 1h after the integrated time and the "
                           "TSA time", {"tsa": True, "hours": 1}),
    "sct-missing": ("fail", "leaf carries no embedded SCT", {"sct": None}),
    "sct-forged": ("fail", "SCT claims the trusted CT log id but is signed by another key",
                   {"sct": "forged"}),
    "sct-unknown-log": ("fail", "SCT validly signed by a CT log that is not in the trusted root",
                        {"sct": "unknown-log"}),
    "wrong-identity-repo": ("fail", "signed by the same workflow path in another repository",
                            {"identity": f"{EVIL}/.github/workflows/build.yaml@refs/heads/main",
                             "source_repo": EVIL}),
    "wrong-identity-workflow": ("fail", "signed by another workflow file of kernels-community",
                                {"identity": f"{KC}/.github/workflows/pr.yaml@refs/heads/main"}),
    "wrong-identity-branch": ("fail", "signed by build.yaml on refs/heads/evil",
                              {"identity": f"{KC}/.github/workflows/build.yaml@refs/heads/evil"}),
    "wrong-issuer": ("fail", "right SAN, but the OIDC issuer extensions name another issuer",
                     {"issuer": "https://issuer.attacker.example"}),
    "policy-wrong-source-repo": ("fail", "kernels policy: SAN and build signer are "
                                 "kernels-community, source repository (.1.12) is not",
                                 {"policy": True, "source_repo": f"{GH}/attacker/kernels"}),
    "policy-wrong-build-signer": ("fail", "kernels policy: build signer URI (.1.9) is a workflow "
                                  "not in the allow-list", {"policy": True, "build_signer_uri":
                                  f"{KC}/.github/workflows/pr.yaml@refs/heads/main"}),
}


def simple_case(name: str):
    def build(i):
        opts = dict(SIMPLE[name][2])
        extra = {"policy": KERNELS_POLICY} if opts.pop("policy", False) else {}
        if "hours" in opts:
            opts["not_before"] = pki.now() + dt.timedelta(hours=opts.pop("hours"))
        return i.sign(ARTIFACT, **opts), extra
    return case(name, *SIMPLE[name][:2])(build)


for _name in SIMPLE:
    simple_case(_name)


# --------------------------------------------------------------------------- time vs. validity


@case("integrated-time-outside-validity", "fail",
      "integratedTime 1h after the leaf was issued (past its 10 minutes); SET re-signed")
def integrated_time_outside(i):
    # The leaf is from two hours ago so the moved time is still in the past:
    # only "outside the certificate validity" is wrong, not "in the future".
    nb = pki.now() - dt.timedelta(hours=2)
    b = i.sign(ARTIFACT, not_before=nb)
    e = entry(b)
    e["integratedTime"] = str(int((nb + dt.timedelta(hours=1)).timestamp()))
    tlog.resign_set(i.rekor(1), e)
    return b


@case("tsa-time-outside-validity", "fail",
      "integratedTime (re-signed SET) is inside the leaf validity but the TSA time is after it")
def tsa_time_outside(i):
    nb = pki.now() - dt.timedelta(hours=2)
    b = i.sign(ARTIFACT, tsa=True, not_before=nb)
    e = entry(b)
    e["integratedTime"] = str(int((nb + dt.timedelta(minutes=1)).timestamp()))
    tlog.resign_set(i.rekor(1), e)
    return b


# --------------------------------------------------------------------------- transparency log


@case("inclusion-proof-broken", "fail", "one inclusion-proof hash has a bit flipped")
def inclusion_proof_broken(i):
    b = i.sign(ARTIFACT)
    hashes_ = entry(b)["inclusionProof"]["hashes"]
    hashes_[0] = flip_bit(hashes_[0], 0)
    return b


@case("inclusion-proof-wrong-size", "fail",
      "inclusion proof has one hash more than (logIndex, treeSize) allows")
def inclusion_proof_wrong_size(i):
    b = i.sign(ARTIFACT)
    entry(b)["inclusionProof"]["hashes"].append(tlog.b64(os.urandom(32)))
    return b


@case("checkpoint-other-key", "fail",
      "checkpoint signed by a key not in the trusted root (key hint unchanged)")
def checkpoint_other_key(i):
    b = i.sign(ARTIFACT)
    e = entry(b)
    size, root = proof_parts(e)
    e["inclusionProof"]["checkpoint"]["envelope"] = tlog.checkpoint(
        i.rekor(1), size, root, key=i.keys["other_rekor_v1"])
    return b


@case("checkpoint-root-mismatch", "fail",
      "validly signed checkpoint whose root differs from the proof's rootHash")
def checkpoint_root_mismatch(i):
    b = i.sign(ARTIFACT)
    e = entry(b)
    size, _ = proof_parts(e)
    e["inclusionProof"]["checkpoint"]["envelope"] = tlog.checkpoint(
        i.rekor(1), size, os.urandom(32))
    return b


@case("checkpoint-size-mismatch", "fail",
      "validly signed checkpoint with the proof's root hash but treeSize+1 as its size")
def checkpoint_size_mismatch(i):
    b = i.sign(ARTIFACT)
    e = entry(b)
    size, root = proof_parts(e)
    e["inclusionProof"]["checkpoint"]["envelope"] = tlog.checkpoint(i.rekor(1), size + 1, root)
    return b, {"known_difference": "sigstore-python never compares the checkpoint's tree size "
               "with the inclusion proof's treeSize (only the root hash)"}


@case("set-forged", "fail", "SET (inclusion promise) signed by a key not in the trusted root")
def set_forged(i):
    b = i.sign(ARTIFACT)
    tlog.resign_set(i.rekor(1), entry(b), key=i.keys["other_rekor_v1"])
    return b


@case("log-body-other-artifact", "fail",
      "CVE-2022-36056: genuine, properly logged entry for another artifact (same leaf) swapped in")
def log_body_other_artifact(i):
    leaf = i.issue_leaf()
    b = i.sign(ARTIFACT, leaf=leaf)
    other = i.sign(OTHER_ARTIFACT, leaf=leaf)
    b["verificationMaterial"]["tlogEntries"] = other["verificationMaterial"]["tlogEntries"]
    return b


@case("two-tlog-entries", "fail", "two valid log entries (the same body logged twice)")
def two_tlog_entries(i):
    b = i.sign(ARTIFACT)
    e = entry(b)
    body = base64.b64decode(e["canonicalizedBody"])
    second = tlog.log_entry(i.rekor(1), body, rng=random.Random(), index_offset=222_000_000)
    b["verificationMaterial"]["tlogEntries"].append(second)
    return b


@case("tlog-unknown-log-id", "fail",
      "logId names no trusted log; SET and checkpoint (hint) re-signed by the real log key")
def tlog_unknown_log_id(i):
    b = i.sign(ARTIFACT)
    e = entry(b)
    fake_id = os.urandom(32)
    e["logId"]["keyId"] = tlog.b64(fake_id)
    size, root = proof_parts(e)
    e["inclusionProof"]["checkpoint"]["envelope"] = tlog.checkpoint(
        i.rekor(1), size, root, hint=fake_id[:4])
    tlog.resign_set(i.rekor(1), e)
    return b, {"known_difference": "sigstore-python treats logId only as a key hint: for an "
               "unknown id it tries every trusted log key, so the entry verifies"}


# --------------------------------------------------------------------------- time sources


@case("tsa-untrusted", "fail",
      "Rekor v2 entry timestamped by a TSA that is not in the trusted root")
def tsa_untrusted(i):
    b = i.sign(ARTIFACT, rekor="v2")
    sig = base64.b64decode(b["messageSignature"]["signature"])
    b["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"] = [
        {"signedTimestamp": tlog.b64(i.timestamp(sig, other=True))}]
    return b


@case("tsa-wrong-message", "fail",
      "Rekor v2 entry; the trusted TSA timestamped the artifact, not the signature")
def tsa_wrong_message(i):
    b = i.sign(ARTIFACT, rekor="v2")
    b["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"] = [
        {"signedTimestamp": tlog.b64(i.timestamp(ARTIFACT))}]
    return b


@case("tsa-validfor-ended", "fail",
      "Rekor v2 + TSA; trusted root's TSA validFor ended an hour before the timestamp")
def tsa_validfor_ended(i):
    root = trusted_root(i)
    root["timestampAuthorities"][0]["validFor"]["end"] = an_hour_ago()
    return i.sign(ARTIFACT, rekor="v2"), {"trusted_root": root}


@case("rekor2-no-timestamp", "fail",
      "Rekor v2 entry without any RFC 3161 timestamp: no verified time")
def rekor2_no_timestamp(i):
    b = i.sign(ARTIFACT, rekor="v2")
    del b["verificationMaterial"]["timestampVerificationData"]
    return b


@case("tsa-undecodable", "fail",
      "Rekor v1 entry with a valid SET (a source of time), its RFC 3161 timestamp replaced by "
      "bytes that are no TimeStampResp: the bundle is refused, not the timestamp skipped")
def tsa_undecodable(i):
    b = i.sign(ARTIFACT, tsa=True)
    b["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"] = [
        {"signedTimestamp": tlog.b64(b"\x30\x82\x01\x00 not a timestamp response")}]
    return b


@case("tsa-truncated", "fail",
      "Rekor v1 entry with a valid SET, its genuine RFC 3161 timestamp cut in half")
def tsa_truncated(i):
    b = i.sign(ARTIFACT, tsa=True)
    stamps = b["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"]
    token = base64.b64decode(stamps[0]["signedTimestamp"])
    stamps[0]["signedTimestamp"] = tlog.b64(token[: len(token) // 2])
    return b


# --------------------------------------------------------------------------- trust root validity


@case("ca-validfor-ended", "fail", "trusted root's Fulcio CA validFor ended an hour before signing")
def ca_validfor_ended(i):
    root = trusted_root(i)
    root["certificateAuthorities"][0]["validFor"]["end"] = an_hour_ago()
    return i.sign(ARTIFACT, tsa=True), {"trusted_root": root, "known_difference":
        "sigstore-python ignores certificateAuthorities[].validFor.end (only start <= now)"}


@case("tlog-validfor-ended", "fail",
      "trusted root's Rekor v1 key validFor ended an hour before integration")
def tlog_validfor_ended(i):
    root = trusted_root(i)
    root["tlogs"][0]["publicKey"]["validFor"]["end"] = an_hour_ago()
    return i.sign(ARTIFACT), {"trusted_root": root, "known_difference":
        "sigstore-python accepts expired log keys for verification without comparing "
        "validFor with integratedTime"}


# --------------------------------------------------------------------------- bundle shape


@case("message-digest-mismatch", "fail",
      "messageSignature.messageDigest is the digest of another artifact")
def message_digest_mismatch(i):
    b = i.sign(ARTIFACT)
    other_digest = hashlib.sha256(OTHER_ARTIFACT).digest()
    b["messageSignature"]["messageDigest"]["digest"] = tlog.b64(other_digest)
    return b


@case("dsse-bundle", "fail",
      "valid DSSE (in-toto) bundle about the artifact: not a messageSignature bundle")
def dsse_bundle(i):
    cert, key = i.issue_leaf()
    statement = rfc8785.dumps({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "metadata.json",
                     "digest": {"sha256": hashlib.sha256(ARTIFACT).hexdigest()}}],
        "predicateType": "https://slsa.dev/provenance/v1", "predicate": {}})
    ptype = "application/vnd.in-toto+json"
    pae = f"DSSEv1 {len(ptype)} {ptype} {len(statement)} ".encode() + statement
    sig = key.sign(pae, ec.ECDSA(hashes.SHA256()))
    envelope = {"payload": tlog.b64(statement), "payloadType": ptype,
                "signatures": [{"sig": tlog.b64(sig)}]}
    body = tlog.dsse_v001(cert, rfc8785.dumps(envelope), statement, sig)
    e = tlog.log_entry(i.rekor(1), body, rng=random.Random())
    return ts.make_bundle(cert, e, bundle_version="0.3", timestamps=[],
                          content={"dsseEnvelope": envelope})


@case("unknown-media-type", "fail", "otherwise valid bundle with mediaType bundle.v0.4+json")
def unknown_media_type(i):
    b = i.sign(ARTIFACT)
    b["mediaType"] = "application/vnd.dev.sigstore.bundle.v0.4+json"
    return b


@case("truncated", "fail", "valid bundle cut in half")
def truncated(i):
    raw = ts.bundle_bytes(i.sign(ARTIFACT))
    return raw[: len(raw) // 2]


@case("oversized", "fail", "valid bundle padded with 2.1 MiB of JSON whitespace (over a 2 MiB cap)")
def oversized(i):
    raw = ts.bundle_bytes(i.sign(ARTIFACT))
    return raw[:-1] + b" " * (2 * MiB + MiB // 10) + raw[-1:], {"known_difference":
        "sigstore-python has no bundle size limit; the padding is only whitespace, so it verifies"}


@case("json-bomb-depth", "fail", "10^5 nested JSON arrays")
def json_bomb_depth(i):
    return b"[" * 100_000 + b"]" * 100_000


@case("json-bomb-width", "fail",
      "~1.9 MiB JSON object with ~160k distinct keys (under a 2 MiB cap)")
def json_bomb_width(i):
    keys = (f'"k{n:06d}":0' for n in range(160_000))
    return ("{" + ",".join(keys) + "}").encode()


@case("not-json", "fail", "bundle file is binary garbage, not JSON")
def not_json(i):
    return b"\x89PNG\r\n\x1a\n" + bytes(random.Random(7).randrange(256) for _ in range(200))


# --------------------------------------------------------------------------- driver


def trusted_root(i) -> dict:
    return json.loads((i.keydir / "trusted_root.json").read_text())


def an_hour_ago() -> str:
    return ts.rfc3339(pki.now() - dt.timedelta(hours=1))


def write_case(outdir: Path, name: str, result) -> None:
    expect, about, _ = CASES[name]
    extra = {}
    if isinstance(result, tuple):
        result, extra = result
    bundle = result if isinstance(result, bytes) else ts.bundle_bytes(result)
    d = outdir / name
    d.mkdir(parents=True, exist_ok=True)
    for stale in ("policy.json", "trusted_root.json", "known_difference"):
        (d / stale).unlink(missing_ok=True)
    (d / "artifact").write_bytes(ARTIFACT)
    (d / "bundle.sigstore.json").write_bytes(bundle)
    (d / "identity").write_text(ts.DEFAULT_IDENTITY + "\n")
    (d / "issuer").write_text(ts.DEFAULT_ISSUER + "\n")
    (d / "expect").write_text(expect + "\n")
    (d / "about").write_text(about + "\n")
    if "policy" in extra:
        ts.write_json(d / "policy.json", extra["policy"], indent=2)
    if "trusted_root" in extra:
        ts.write_json(d / "trusted_root.json", extra["trusted_root"], indent=2)
    if "known_difference" in extra:
        (d / "known_difference").write_text(extra["known_difference"] + "\n")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    inst = ts.Instance.load(Path(argv[0]))
    outdir = Path(argv[1])
    for name, (_, _, build) in CASES.items():
        write_case(outdir, name, build(inst))
    print(f"wrote {len(CASES)} cases to {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
