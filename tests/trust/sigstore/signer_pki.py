"""X.509 half of the offline test signer: CAs, Fulcio-like leaves, embedded SCTs.

Everything here is throw-away test PKI. The shapes follow what production
Fulcio / CT / TSA certificates look like, because the verifiers under test
(sigstore-python and the C++ verifier) run real X.509 path validation
(cryptography's WebPKI profile) over them: a certificate that is merely
"close enough" would fail for the wrong reason and make the negative cases
meaningless.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import struct
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

# Fulcio extension OIDs (https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md).
OID_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")  # raw string bytes
OID_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")  # DER UTF8String
OID_BUILD_SIGNER_URI = ObjectIdentifier("1.3.6.1.4.1.57264.1.9")
OID_SOURCE_REPO_URI = ObjectIdentifier("1.3.6.1.4.1.57264.1.12")
# RFC 6962 embedded SCT list. cryptography can parse but not build SCTs, so the
# extension is emitted as an UnrecognizedExtension with our own TLS encoding.
OID_SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")

UTC = dt.timezone.utc


def now() -> dt.datetime:
    # Certificates carry whole seconds; dropping microseconds keeps "now" values
    # comparable with notBefore/notAfter and with integratedTime.
    return dt.datetime.now(UTC).replace(microsecond=0)


# --------------------------------------------------------------------------- keys


def new_p256() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def new_ed25519() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


def spki_der(public_key) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_id(public_key) -> bytes:
    """RFC 6962 key id: SHA-256 of the DER SubjectPublicKeyInfo (CT log ids, Rekor v1 log id)."""
    return hashlib.sha256(spki_der(public_key)).digest()


def save_key(path: Path, key) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def load_key(path: Path):
    return serialization.load_pem_private_key(path.read_bytes(), password=None)


def save_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def load_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


# --------------------------------------------------------------------------- CAs


def _name(org: str, cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _builder(subject: x509.Name, issuer_name: x509.Name, key, signer_key,
             not_before: dt.datetime, not_after: dt.datetime, *, signs_certs: bool):
    """What every certificate here starts with: names, key, serial, validity, key usage
    (certificate signing for CAs, digital signature otherwise) and both key identifiers."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(
            x509.KeyUsage(
                digital_signature=not signs_certs, content_commitment=False,
                key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=signs_certs, crl_sign=signs_certs,
                encipher_only=False, decipher_only=False,
            ),
            True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_key.public_key()), False
        )
    )


def make_ca(
    org: str,
    cn: str,
    key,
    *,
    issuer: x509.Certificate | None = None,
    issuer_key=None,
    not_before: dt.datetime,
    not_after: dt.datetime,
    path_length: int | None = None,
) -> x509.Certificate:
    """A root (issuer=None) or intermediate CA.

    WebPKI path validation (used by sigstore-python via cryptography) insists on
    critical BasicConstraints, keyCertSign, and key identifiers, so all are set.
    """
    subject = _name(org, cn)
    signer_key = issuer_key if issuer is not None else key
    builder = _builder(
        subject, issuer.subject if issuer is not None else subject, key, signer_key,
        not_before, not_after, signs_certs=True,
    ).add_extension(x509.BasicConstraints(ca=True, path_length=path_length), True)
    if issuer is not None:
        # Fulcio's intermediate is restricted to code signing; mirror it.
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False
        )
    return builder.sign(signer_key, hashes.SHA256())


def make_tsa_leaf(
    org: str, cn: str, key, *, issuer: x509.Certificate, issuer_key,
    not_before: dt.datetime, not_after: dt.datetime,
) -> x509.Certificate:
    """A TSA signing certificate: RFC 3161 §2.3 requires the EKU to be critical and
    to contain only id-kp-timeStamping (OpenSSL's `ts -reply` refuses otherwise)."""
    return (
        _builder(_name(org, cn), issuer.subject, key, issuer_key, not_before, not_after,
                 signs_certs=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), True)
        .sign(issuer_key, hashes.SHA256())
    )


# --------------------------------------------------------------------------- SCTs


def _der_utf8(value: str) -> bytes:
    return _der_tlv(0x0C, value.encode())


def _der_tlv(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + length + body


def sct_signed_data(timestamp_ms: int, issuer_key_hash: bytes, tbs: bytes) -> bytes:
    """RFC 6962 §3.2 `digitally-signed` input for a precert_entry SCT (v1, no extensions)."""
    return (
        struct.pack("!BBQH", 0, 0, timestamp_ms, 1)  # v1, certificate_timestamp, ts, precert_entry
        + issuer_key_hash
        + len(tbs).to_bytes(3, "big") + tbs      # opaque TBSCertificate<1..2^24-1>
        + struct.pack("!H", 0)                   # CtExtensions, empty
    )


def encode_sct(log_id: bytes, timestamp_ms: int, signature: bytes) -> bytes:
    """One TLS-encoded SignedCertificateTimestamp (v1, SHA-256 + ECDSA)."""
    return (
        struct.pack("!B", 0) + log_id + struct.pack("!QH", timestamp_ms, 0)
        + struct.pack("!BBH", 4, 3, len(signature)) + signature
    )


def sct_list_extension(scts: list[bytes]) -> x509.UnrecognizedExtension:
    """SignedCertificateTimestampList, TLS-encoded, wrapped in a DER OCTET STRING
    (the extnValue holds an OCTET STRING whose content is the TLS structure)."""
    items = b"".join(struct.pack("!H", len(s)) + s for s in scts)
    tls = struct.pack("!H", len(items)) + items
    return x509.UnrecognizedExtension(OID_SCT_LIST, _der_tlv(0x04, tls))


# --------------------------------------------------------------------------- leaves


def issue_fulcio_leaf(
    ca_cert: x509.Certificate,
    ca_key,
    *,
    san_uri: str,
    issuer: str,
    source_repo: str,
    build_signer_uri: str,
    not_before: dt.datetime,
    lifetime: dt.timedelta = dt.timedelta(minutes=10),
    ct_key=None,
    ct_log_id: bytes | None = None,
    sct_time: dt.datetime | None = None,
):
    """Issue a Fulcio-shaped code-signing leaf; returns (certificate, private key).

    With `ct_key` set, an RFC 6962 SCT is embedded. The SCT signs the
    precertificate TBS, i.e. the final TBS minus the SCT list extension (the
    precertificate differs from it only by the poison extension, which RFC 6962
    §3.2 says to strip). Building the TBS without either extension yields exactly
    those bytes; the assertion below cross-checks it against cryptography's own
    `tbs_precertificate_bytes`, which is what sigstore-python verifies against.
    `ct_log_id` may differ from `key_id(ct_key)` to forge an SCT for a trusted log.
    """
    key = new_p256()
    builder = (
        # Fulcio leaves have an empty subject...
        _builder(x509.Name([]), ca_cert.subject, key, ca_key, not_before, not_before + lifetime,
                 signs_certs=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False)
        # ...so the SAN must be critical (RFC 5280 §4.2.1.6).
        .add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(san_uri)]), True
        )
        .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V1, issuer.encode()), False)
        .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V2, _der_utf8(issuer)), False)
        .add_extension(
            x509.UnrecognizedExtension(OID_BUILD_SIGNER_URI, _der_utf8(build_signer_uri)),
            False,
        )
        .add_extension(
            x509.UnrecognizedExtension(OID_SOURCE_REPO_URI, _der_utf8(source_repo)), False
        )
    )
    if ct_key is None:
        return builder.sign(ca_key, hashes.SHA256()), key

    precert_tbs = builder.sign(ca_key, hashes.SHA256()).tbs_certificate_bytes
    ts_ms = int((sct_time or not_before).timestamp() * 1000)
    issuer_key_hash = hashlib.sha256(spki_der(ca_key.public_key())).digest()
    sig = ct_key.sign(
        sct_signed_data(ts_ms, issuer_key_hash, precert_tbs), ec.ECDSA(hashes.SHA256())
    )
    log_id = ct_log_id if ct_log_id is not None else key_id(ct_key.public_key())
    sct = encode_sct(log_id, ts_ms, sig)
    cert = builder.add_extension(sct_list_extension([sct]), False).sign(
        ca_key, hashes.SHA256()
    )
    assert cert.tbs_precertificate_bytes == precert_tbs, "precert TBS reconstruction"
    return cert, key
