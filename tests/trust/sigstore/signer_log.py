"""Transparency-log half of the offline test signer: a fake Rekor v1 / v2.

No log server exists: an entry is "logged" by placing its canonicalized body as
one leaf of a small RFC 6962 Merkle tree padded with random leaves, and the log
key signs a checkpoint over that tree (and, for Rekor v1, a SET). That is all a
verifier can observe of a real log, so it is enough to produce bundles that
verify exactly like production ones.

RFC 3161 timestamps come from `openssl ts -reply` with the throw-away TSA key:
hand-rolling CMS SignedData would test our encoder, not the verifier.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import rfc8785
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

import signer_pki as pki


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ------------------------------------------------------------------ Merkle (RFC 6962 §2.1)


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """Largest power of two strictly smaller than n (n >= 2)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def tree_root(leaves: list[bytes]) -> bytes:
    """MTH over leaf *hashes*."""
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return node_hash(tree_root(leaves[:k]), tree_root(leaves[k:]))


def inclusion_path(index: int, leaves: list[bytes]) -> list[bytes]:
    """PATH(m, D[n]) from RFC 6962 §2.1.1, bottom-up (the order bundles use)."""
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return inclusion_path(index, leaves[:k]) + [tree_root(leaves[k:])]
    return inclusion_path(index - k, leaves[k:]) + [tree_root(leaves[:k])]


def proof_shape(index: int, size: int) -> tuple[int, int]:
    """(inner, border) hash counts of an inclusion proof, as RFC 9162 verifiers split it."""
    inner = (index ^ (size - 1)).bit_length()
    return inner, bin(index >> inner).count("1")


def pick_position(rng: random.Random) -> tuple[int, int]:
    """A tree size in 5..9 and a leaf index whose proof has both inner and border
    hashes, so a verifier that gets either half of the algorithm wrong fails."""
    while True:
        size = rng.randint(5, 9)
        index = rng.randrange(size)
        inner, border = proof_shape(index, size)
        if inner and border:
            return size, index


# --------------------------------------------------------------------------- logs


@dataclass
class Log:
    """A fake transparency log.

    v1 (Rekor v1): ECDSA P-256; log id = SHA-256(SPKI); checkpoint origin is
    "<host> - <tree id>" and the note key hint is the first 4 bytes of the log id.
    v2 (Rekor v2 / tiles): Ed25519; the log id is the C2SP signed-note key hash
    SHA-256(origin || 0x0A || 0x01 || pubkey), so the note hint again equals the
    first 4 bytes of the log id. That is how production (sigstage) trusted roots
    spell Rekor v2 log ids: they are *not* SHA-256(SPKI).
    """

    version: int
    key: object  # private key
    host: str

    @property
    def base_url(self) -> str:
        return f"https://{self.host}"

    @property
    def origin(self) -> str:
        return f"{self.host} - 2605736670972794746" if self.version == 1 else self.host

    @property
    def log_id(self) -> bytes:
        return log_id_for(self.version, self.key.public_key(), self.host)

    def sign(self, data: bytes, key=None) -> bytes:
        key = key or self.key
        if isinstance(key, ed25519.Ed25519PrivateKey):
            return key.sign(data)
        return key.sign(data, ec.ECDSA(hashes.SHA256()))


def log_id_for(version: int, public_key, host: str) -> bytes:
    if version == 1:
        return pki.key_id(public_key)
    raw = public_key.public_bytes_raw()
    return hashlib.sha256(host.encode() + b"\n\x01" + raw).digest()


def checkpoint(
    log: Log, size: int, root: bytes, *, key=None, hint: bytes | None = None
) -> str:
    """A signed note (C2SP tlog-checkpoint). `key`/`hint` override the signer for
    negative cases; the default hint is the log id prefix sigstore-python matches on."""
    body = f"{log.origin}\n{size}\n{b64(root)}\n"
    sig = log.sign(body.encode(), key)
    hint = log.log_id[:4] if hint is None else hint
    name = log.origin.split(" ")[0]  # the key name never contains spaces
    return f"{body}\n\u2014 {name} {b64(hint + sig)}\n"


def set_payload(body: bytes, integrated_time: int, log_id: bytes, log_index: int) -> bytes:
    """What a Rekor v1 SignedEntryTimestamp signs: RFC 8785 JSON of these four fields."""
    return rfc8785.dumps(
        {
            "body": b64(body),
            "integratedTime": integrated_time,
            "logID": log_id.hex(),
            "logIndex": log_index,
        }
    )


# --------------------------------------------------------------------------- entry bodies


def hashedrekord_v001(cert, signature: bytes, digest: bytes) -> bytes:
    # The verifier compares the parsed body to one rebuilt from the bundle, field
    # by field; the public key is the base64 of the leaf *PEM*, as Rekor v1 stores it.
    return rfc8785.dumps(
        {
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": digest.hex()}},
                "signature": {
                    "content": b64(signature),
                    "publicKey": {"content": b64(pki.pem(cert))},
                },
            },
        }
    )


def hashedrekord_v002(cert, signature: bytes, digest: bytes) -> bytes:
    # Rekor v2 entry (protobuf JSON of rekor.v2.Entry): the verifier is the DER leaf.
    return rfc8785.dumps(
        {
            "apiVersion": "0.0.2",
            "kind": "hashedrekord",
            "spec": {
                "hashedRekordV002": {
                    "data": {"algorithm": "SHA2_256", "digest": b64(digest)},
                    "signature": {
                        "content": b64(signature),
                        "verifier": {
                            "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                            "x509Certificate": {"rawBytes": b64(pki.der(cert))},
                        },
                    },
                }
            },
        }
    )


def dsse_v001(cert, envelope_json: bytes, payload: bytes, signature: bytes) -> bytes:
    return rfc8785.dumps(
        {
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {
                    "algorithm": "sha256",
                    "value": hashlib.sha256(envelope_json).hexdigest(),
                },
                "payloadHash": {
                    "algorithm": "sha256",
                    "value": hashlib.sha256(payload).hexdigest(),
                },
                "signatures": [{"signature": b64(signature), "verifier": b64(pki.pem(cert))}],
            },
        }
    )


# --------------------------------------------------------------------------- entries


def log_entry(
    log: Log,
    body: bytes,
    *,
    rng: random.Random,
    integrated_time: int | None = None,
    index_offset: int | None = None,
) -> dict:
    """Log `body` and return the bundle's TransparencyLogEntry (protobuf JSON).

    Rekor v1 entries get integratedTime + SET; their global logIndex is offset
    from the inclusion proof's (tree-local) logIndex because v1 is sharded, and
    a verifier must use the proof's index for the Merkle path and the entry's
    index for the SET. Rekor v2 entries have neither integratedTime nor SET.
    """
    size, index = pick_position(rng)
    leaves = [leaf_hash(os.urandom(48)) for _ in range(size)]
    leaves[index] = leaf_hash(body)
    root = tree_root(leaves)
    kind = json.loads(body)
    if log.version == 1:
        global_index = index + (123_456_000 if index_offset is None else index_offset)
    else:
        global_index = index + (index_offset or 0)
    entry = {
        "logIndex": str(global_index),
        "logId": {"keyId": b64(log.log_id)},
        "kindVersion": {"kind": kind["kind"], "version": kind["apiVersion"]},
    }
    if log.version == 1:
        t = int(pki.now().timestamp() if integrated_time is None else integrated_time)
        entry["integratedTime"] = str(t)
        entry["inclusionPromise"] = {
            "signedEntryTimestamp": b64(log.sign(set_payload(body, t, log.log_id, global_index)))
        }
    entry["inclusionProof"] = {
        "logIndex": str(index),
        "rootHash": b64(root),
        "treeSize": str(size),
        "hashes": [b64(h) for h in inclusion_path(index, leaves)],
        "checkpoint": {"envelope": checkpoint(log, size, root)},
    }
    entry["canonicalizedBody"] = b64(body)
    return entry


def resign_set(log: Log, entry: dict, *, key=None) -> None:
    """Recompute a v1 entry's SET after its integratedTime/logIndex changed."""
    payload = set_payload(
        base64.b64decode(entry["canonicalizedBody"]),
        int(entry["integratedTime"]),
        base64.b64decode(entry["logId"]["keyId"]),
        int(entry["logIndex"]),
    )
    entry["inclusionPromise"] = {"signedEntryTimestamp": b64(log.sign(payload, key))}


# --------------------------------------------------------------------------- RFC 3161


_TSA_CONFIG = """\
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
serial = {serial}
signer_digest = sha256
default_policy = 1.3.6.1.4.1.57264.2
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = no
tsa_name = no
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def rfc3161_timestamp(tsa_cert_path: Path, tsa_key_path: Path, message: bytes) -> bytes:
    """DER TimeStampResp over SHA-256(message), genTime = now, signer cert embedded
    (the request sets certReq, as sigstore clients do, with a nonce)."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "msg").write_bytes(message)
        (d / "serial").write_text(f"{random.getrandbits(63):016x}\n")
        (d / "ts.cnf").write_text(_TSA_CONFIG.format(serial=d / "serial"))
        run = lambda *args: subprocess.run(  # noqa: E731
            ["openssl", "ts", *args], cwd=d, check=True, capture_output=True
        )
        run("-query", "-data", "msg", "-sha256", "-cert", "-out", "q.tsq")
        run(
            "-reply", "-queryfile", "q.tsq", "-config", "ts.cnf",
            "-signer", str(tsa_cert_path), "-inkey", str(tsa_key_path), "-out", "r.tsr",
        )
        return (d / "r.tsr").read_bytes()
