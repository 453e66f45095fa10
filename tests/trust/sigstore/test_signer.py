#!/usr/bin/env python3
"""Offline test signer: a throw-away Sigstore instance (Fulcio, CT, Rekor v1/v2, TSA).

    test_signer.py init KEYDIR
    test_signer.py sign KEYDIR ARTIFACT OUT [--identity URI] [--issuer URL]
        [--source-repo URI] [--build-signer-uri URI] [--rekor v1|v2]
        [--bundle-version 0.1|0.2|0.3] [--tsa]

`init` writes PEM keys/certs plus `trusted_root.json` and `trust_config.json`;
`sign` emits a Sigstore bundle for ARTIFACT that sigstore-python verifies
against that trusted root. Importable: `Instance.load(keydir).sign(data)`.

All times are relative to "now" so fixtures can be minted at test time; the
leaf certificate lives 10 minutes like a real Fulcio certificate, so a bundle
only verifies shortly after it was made (CAs/TSA last ten years).
(Not a pytest module despite the name: it defines no test_* functions.)
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, str(Path(__file__).resolve().parent))
import signer_log as tlog  # noqa: E402
import signer_pki as pki  # noqa: E402

DEFAULT_IDENTITY = (
    "https://github.com/huggingface/kernels-community/"
    ".github/workflows/build.yaml@refs/heads/main"
)
DEFAULT_ISSUER = "https://token.actions.githubusercontent.com"
DEFAULT_SOURCE_REPO = "https://github.com/huggingface/kernels-community"

DOMAIN = "sigstore-test.invalid"
FULCIO_URL = f"https://fulcio.{DOMAIN}"
CTLOG_URL = f"https://ctfe.{DOMAIN}/test"
TSA_URL = f"https://timestamp.{DOMAIN}/api/v1/timestamp"
REKOR1_HOST = f"rekor.{DOMAIN}"
REKOR2_HOST = f"log2026-1.rekor.{DOMAIN}"

MEDIA_TYPES = {
    "0.1": "application/vnd.dev.sigstore.bundle+json;version=0.1",
    "0.2": "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "0.3": "application/vnd.dev.sigstore.bundle.v0.3+json",
}

# KEYDIR layout: name -> (has certificate, key kind). "other_*" material is
# deliberately NOT in the trusted root; negative cases sign with it.
_MATERIAL = {
    "fulcio_root": (True, "p256"),
    "fulcio_intermediate": (True, "p256"),
    "other_ca_root": (True, "p256"),
    "other_ca_intermediate": (True, "p256"),
    "tsa_root": (True, "p256"),
    "tsa_leaf": (True, "p256"),
    "other_tsa_root": (True, "p256"),
    "other_tsa_leaf": (True, "p256"),
    "ctlog": (False, "p256"),
    "other_ctlog": (False, "p256"),
    "rekor_v1": (False, "p256"),
    "other_rekor_v1": (False, "p256"),
    "rekor_v2": (False, "ed25519"),
    "other_rekor_v2": (False, "ed25519"),
}


def init(keydir: Path) -> "Instance":
    """Create all keys and certificates, then write trusted_root.json / trust_config.json."""
    keydir.mkdir(parents=True, exist_ok=True)
    keys = {
        name: pki.new_p256() if kind == "p256" else pki.new_ed25519()
        for name, (_, kind) in _MATERIAL.items()
    }
    start = pki.now() - dt.timedelta(days=1)
    end = start + dt.timedelta(days=3650)
    certs = {}
    for prefix, org in (("fulcio", "sigstore-test"), ("other_ca", "other-ca-test")):
        root = pki.make_ca(org, f"{org} root", keys[f"{prefix}_root"],
                           not_before=start, not_after=end, path_length=1)
        certs[f"{prefix}_root"] = root
        certs[f"{prefix}_intermediate"] = pki.make_ca(
            org, f"{org} intermediate", keys[f"{prefix}_intermediate"],
            issuer=root, issuer_key=keys[f"{prefix}_root"],
            not_before=start, not_after=end, path_length=0,
        )
    for prefix, org in (("tsa", "sigstore-test"), ("other_tsa", "other-tsa-test")):
        root = pki.make_ca(org, f"{org} tsa root", keys[f"{prefix}_root"],
                           not_before=start, not_after=end)
        certs[f"{prefix}_root"] = root
        certs[f"{prefix}_leaf"] = pki.make_tsa_leaf(
            org, f"{org} tsa", keys[f"{prefix}_leaf"], issuer=root,
            issuer_key=keys[f"{prefix}_root"], not_before=start, not_after=end,
        )
    for name, key in keys.items():
        pki.save_key(keydir / f"{name}.key", key)
        if name in certs:
            pki.save_cert(keydir / f"{name}.pem", certs[name])
    inst = Instance.load(keydir)
    root_json = inst.trusted_root(valid_from=start)
    write_json(keydir / "trusted_root.json", root_json, indent=2)
    write_json(keydir / "trust_config.json", trust_config(root_json, start), indent=2)
    return inst


@dataclass
class Instance:
    """The keys of one throw-away Sigstore instance, loaded from KEYDIR."""

    keydir: Path
    keys: dict
    certs: dict

    @classmethod
    def load(cls, keydir: Path | str) -> "Instance":
        keydir = Path(keydir)
        keys = {n: pki.load_key(keydir / f"{n}.key") for n in _MATERIAL}
        certs = {n: pki.load_cert(keydir / f"{n}.pem") for n, (c, _) in _MATERIAL.items() if c}
        return cls(keydir, keys, certs)

    # ---- services
    def rekor(self, version: int, *, other: bool = False) -> tlog.Log:
        """The trusted log, or (other=True) an impostor with the same name but another key."""
        name = f"{'other_' if other else ''}rekor_v{version}"
        return tlog.Log(version, self.keys[name], REKOR1_HOST if version == 1 else REKOR2_HOST)

    def timestamp(self, message: bytes, *, other: bool = False) -> bytes:
        prefix = "other_tsa" if other else "tsa"
        return tlog.rfc3161_timestamp(
            self.keydir / f"{prefix}_leaf.pem", self.keydir / f"{prefix}_leaf.key", message
        )

    def issue_leaf(
        self,
        *,
        identity: str = DEFAULT_IDENTITY,
        issuer: str = DEFAULT_ISSUER,
        source_repo: str = DEFAULT_SOURCE_REPO,
        build_signer_uri: str | None = None,
        not_before: dt.datetime | None = None,
        ca: str = "fulcio",
        sct: str | None = "trusted",
    ):
        """A Fulcio-like leaf. `ca`: "fulcio" | "other_ca"; `sct`: "trusted" (valid
        SCT), "forged" (claims the trusted CT log id, signed by another key),
        "unknown-log" (a real SCT from a log not in the root), or None (no SCT)."""
        nb = not_before or (pki.now() - dt.timedelta(minutes=1))
        ct_key = {"trusted": "ctlog", "forged": "other_ctlog",
                  "unknown-log": "other_ctlog", None: None}[sct]
        return pki.issue_fulcio_leaf(
            self.certs[f"{ca}_intermediate"], self.keys[f"{ca}_intermediate"],
            san_uri=identity, issuer=issuer, source_repo=source_repo,
            build_signer_uri=build_signer_uri or identity, not_before=nb,
            ct_key=self.keys[ct_key] if ct_key else None,
            ct_log_id=pki.key_id(self.keys["ctlog"].public_key()) if sct == "forged" else None,
            sct_time=nb,
        )

    # ---- signing
    def sign(
        self,
        artifact: bytes,
        *,
        rekor: str = "v1",
        bundle_version: str = "0.3",
        tsa: bool = False,
        leaf=None,
        tamper_signature=None,
        rng: random.Random | None = None,
        **leaf_options,
    ) -> dict:
        """Sign `artifact` (raw bytes, ECDSA P-256 / SHA-256), log it, return the bundle dict.

        `leaf` reuses an already issued (cert, key); otherwise `leaf_options` go to
        `issue_leaf`. `tamper_signature(sig) -> sig` corrupts the signature *before*
        it is logged/timestamped, so only the signature itself is wrong.
        Rekor v2 always gets an RFC 3161 timestamp (it has no other signed time).
        """
        if rekor not in ("v1", "v2") or bundle_version not in MEDIA_TYPES:
            raise ValueError("rekor must be v1|v2 and bundle_version 0.1|0.2|0.3")
        if bundle_version == "0.1" and rekor == "v2":
            raise ValueError("bundle v0.1 requires an inclusion promise (Rekor v1)")
        rng = rng or random.Random(os.urandom(16))
        cert, key = leaf or self.issue_leaf(**leaf_options)
        digest = hashlib.sha256(artifact).digest()
        signature = key.sign(artifact, ec.ECDSA(hashes.SHA256()))
        if tamper_signature:
            signature = tamper_signature(signature)
        if rekor == "v1":
            body = tlog.hashedrekord_v001(cert, signature, digest)
        else:
            body = tlog.hashedrekord_v002(cert, signature, digest)
        entry = tlog.log_entry(self.rekor(1 if rekor == "v1" else 2), body, rng=rng)
        timestamps = [self.timestamp(signature)] if (tsa or rekor == "v2") else []
        return make_bundle(
            cert, entry, bundle_version=bundle_version, timestamps=timestamps,
            content={"messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": tlog.b64(digest)},
                "signature": tlog.b64(signature),
            }},
        )

    # ---- trust material
    def trusted_root(self, *, valid_from: dt.datetime) -> dict:
        """trusted_root.json (protobuf JSON of dev.sigstore.trustroot.v1.TrustedRoot)."""
        start = {"start": rfc3339(valid_from)}

        def log_instance(url: str, public_key, details: str, log_id: bytes) -> dict:
            return {
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {"rawBytes": tlog.b64(pki.spki_der(public_key)),
                              "keyDetails": details, "validFor": dict(start)},
                "logId": {"keyId": tlog.b64(log_id)},
            }

        def authority(cn: str, uri: str, chain: list[str]) -> dict:
            return {
                "subject": {"organization": "sigstore-test", "commonName": cn},
                "uri": uri,
                "certChain": {"certificates": [
                    {"rawBytes": tlog.b64(pki.der(self.certs[c]))} for c in chain]},
                "validFor": dict(start),
            }

        logs = [self.rekor(1), self.rekor(2)]
        ct_pub = self.keys["ctlog"].public_key()
        return {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [
                log_instance(log.base_url, log.key.public_key(), details, log.log_id)
                for log, details in zip(logs, ("PKIX_ECDSA_P256_SHA_256", "PKIX_ED25519"))
            ],
            "certificateAuthorities": [
                authority("sigstore-test", FULCIO_URL,
                          ["fulcio_intermediate", "fulcio_root"])],
            "ctlogs": [log_instance(CTLOG_URL, ct_pub, "PKIX_ECDSA_P256_SHA_256",
                                    pki.key_id(ct_pub))],
            "timestampAuthorities": [
                authority("sigstore-test-tsa", TSA_URL, ["tsa_leaf", "tsa_root"])],
        }


def make_bundle(cert, entry: dict, *, bundle_version: str, timestamps: list[bytes],
                content: dict) -> dict:
    """Assemble bundle JSON; `content` is {"messageSignature": ...} or {"dsseEnvelope": ...}."""
    cert_b64 = tlog.b64(pki.der(cert))
    if bundle_version == "0.3":
        material = {"certificate": {"rawBytes": cert_b64}}
    else:
        material = {"x509CertificateChain": {"certificates": [{"rawBytes": cert_b64}]}}
    material["tlogEntries"] = [entry]
    if timestamps:
        material["timestampVerificationData"] = {
            "rfc3161Timestamps": [{"signedTimestamp": tlog.b64(t)} for t in timestamps]
        }
    return {"mediaType": MEDIA_TYPES[bundle_version], "verificationMaterial": material,
            **content}


def trust_config(trusted_root: dict, valid_from: dt.datetime) -> dict:
    """ClientTrustConfig for `sigstore verify --trust-config` (the signing config is
    only parsed, never used, by verification; it just has to be well-formed)."""
    def service(url: str, version: int = 1) -> dict:
        return {"url": url, "majorApiVersion": version,
                "validFor": {"start": rfc3339(valid_from)}, "operator": DOMAIN}

    return {
        "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
        "trustedRoot": trusted_root,
        "signingConfig": {
            "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
            "caUrls": [service(FULCIO_URL)],
            "oidcUrls": [service(f"https://oauth2.{DOMAIN}/auth")],
            "rekorTlogUrls": [service(f"https://{REKOR2_HOST}", 2),
                              service(f"https://{REKOR1_HOST}")],
            "tsaUrls": [service(TSA_URL)],
            "rekorTlogConfig": {"selector": "ANY"},
            "tsaConfig": {"selector": "ANY"},
        },
    }


def rfc3339(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def bundle_bytes(bundle: dict) -> bytes:
    """Compact JSON, as cosign writes it."""
    return json.dumps(bundle, separators=(",", ":")).encode()


def write_json(path: Path, obj, *, indent: int | None = None) -> None:
    path.write_text(json.dumps(obj, indent=indent) + "\n")


def sign_file(keydir: Path | str, artifact: Path | str, out: Path | str, **options) -> dict:
    """Convenience for other test scripts: sign a file, write its bundle, return it."""
    bundle = Instance.load(keydir).sign(Path(artifact).read_bytes(), **options)
    Path(out).write_bytes(bundle_bytes(bundle))
    return bundle


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_init = sub.add_parser("init", help="create a throw-away Sigstore instance")
    p_init.add_argument("keydir", type=Path)
    p_sign = sub.add_parser("sign", help="sign ARTIFACT, write a bundle to OUT")
    p_sign.add_argument("keydir", type=Path)
    p_sign.add_argument("artifact", type=Path)
    p_sign.add_argument("out", type=Path)
    p_sign.add_argument("--identity", default=DEFAULT_IDENTITY)
    p_sign.add_argument("--issuer", default=DEFAULT_ISSUER)
    p_sign.add_argument("--source-repo", default=DEFAULT_SOURCE_REPO)
    p_sign.add_argument("--build-signer-uri", default=None, help="default: --identity")
    p_sign.add_argument("--rekor", choices=("v1", "v2"), default="v1")
    p_sign.add_argument("--bundle-version", choices=tuple(MEDIA_TYPES), default="0.3")
    p_sign.add_argument("--tsa", action="store_true", help="add an RFC 3161 timestamp")
    args = ap.parse_args(argv)
    if args.cmd == "init":
        init(args.keydir)
        return 0
    sign_file(
        args.keydir, args.artifact, args.out, rekor=args.rekor,
        bundle_version=args.bundle_version, tsa=args.tsa, identity=args.identity,
        issuer=args.issuer, source_repo=args.source_repo,
        build_signer_uri=args.build_signer_uri,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
