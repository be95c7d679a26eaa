"""Certificate files the TLS operations modules change or protect: rotation, encrypted keys, OCSP responses.

Unlike tls_support's session-wide files these are made per test in the test's own directory (rotation
overwrites them). `issue(ca, directory, name)` writes a leaf's chain and key; `encrypt_key` writes a key
under a password, as PKCS#8 or in the traditional PEM form; `ocsp_response` has the `openssl ocsp`
command answer for a certificate from an index file, as a CA's responder would.

Modules load the fixtures with `pytest_plugins = ("tls_support", "tls_files_support")`.
"""

from __future__ import annotations

import datetime
import shutil
import ssl
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

trustme = pytest.importorskip("trustme")
serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
x509 = pytest.importorskip("cryptography.x509")
hashes = pytest.importorskip("cryptography.hazmat.primitives.hashes")
ocsp = pytest.importorskip("cryptography.x509.ocsp")


@dataclass
class Leaf:
    """A certificate issued by the test CA: its chain file, key file, and the leaf's DER bytes."""

    cert: Path
    key: Path
    der: bytes
    trustme_leaf: trustme.LeafCert


def issue(ca: trustme.CA, directory: Path, name: str, *, with_issuer: bool = False) -> Leaf:
    """A localhost/127.0.0.1 certificate in `directory`; `with_issuer` appends the CA to the chain file."""
    return issue_for(ca, directory, name, ("localhost", "127.0.0.1"), with_issuer=with_issuer)


def issue_for(ca: trustme.CA, directory: Path, name: str, names: tuple[str, ...], *, with_issuer: bool = False) -> Leaf:
    """A certificate for `names` in `directory`, as `issue`."""
    leaf = ca.issue_cert(*names)
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
    cert.write_bytes(chain + (ca.cert_pem.bytes() if with_issuer else b""))
    leaf.private_key_pem.write_to_path(str(key))
    der = ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())
    return Leaf(cert, key, der, leaf)


def encrypt_key(key: Path, target: Path, password: bytes, *, pkcs8: bool) -> Path:
    """`key` written to `target` encrypted under `password`: PKCS#8 (ENCRYPTED PRIVATE KEY) or traditional
    (Proc-Type: 4,ENCRYPTED with DEK-Info)."""
    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    encoding = serialization.PrivateFormat.PKCS8 if pkcs8 else serialization.PrivateFormat.TraditionalOpenSSL
    target.write_bytes(
        private.private_bytes(serialization.Encoding.PEM, encoding, serialization.BestAvailableEncryption(password))
    )
    text = target.read_text()
    assert ("ENCRYPTED PRIVATE KEY" in text) if pkcs8 else ("Proc-Type: 4,ENCRYPTED" in text), text[:120]
    return target


def openssl() -> str:
    """The openssl command (scripts/test.sh installs it)."""
    path = shutil.which("openssl")
    if path is None:
        pytest.fail("the openssl command is missing (scripts/test.sh installs the openssl package)")
    return path


def ocsp_response(
    ca_cert: Path, ca_key: Path, leaf: Leaf, target: Path, *, status: str = "V", days: int | None = 2
) -> Path:
    """A signed DER OCSP response for `leaf` made by `openssl ocsp` from an index file (status `V` valid or
    `R` revoked), the CA signing as its own responder, its nextUpdate `days` after now (None: none)."""
    cert = x509.load_der_x509_certificate(leaf.der)
    serial = format(cert.serial_number, "X")
    serial = serial if len(serial) % 2 == 0 else "0" + serial
    subject = "".join(f"/{attribute.rfc4514_string()}" for attribute in cert.subject)
    revoked = "250101000000Z" if status == "R" else ""
    index = target.with_suffix(".index")
    index.write_text(f"{status}\t300001010000Z\t{revoked}\t{serial}\tunknown\t{subject}\n")
    leaf_pem = target.with_suffix(".leaf.pem")
    leaf_pem.write_text(ssl.DER_cert_to_PEM_cert(leaf.der))
    request = target.with_suffix(".req")
    run = [openssl(), "ocsp"]
    subprocess.run(
        [*run, "-issuer", str(ca_cert), "-cert", str(leaf_pem), "-no_nonce", "-reqout", str(request)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *run,
            "-index",
            str(index),
            "-CA",
            str(ca_cert),
            "-rsigner",
            str(ca_cert),
            "-rkey",
            str(ca_key),
            "-reqin",
            str(request),
            "-respout",
            str(target),
            *(["-ndays", str(days)] if days is not None else []),
        ],
        check=True,
        capture_output=True,
    )
    return target


def expired_ocsp_response(ca_cert: Path, ca_key: Path, leaf: Leaf, target: Path) -> Path:
    """A good response for `leaf` whose nextUpdate passed an hour ago (`openssl ocsp` makes none such), signed
    by the CA with the `cryptography` package's builder."""
    issuer = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    key = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    now = datetime.datetime.now(datetime.UTC)
    builder = ocsp.OCSPResponseBuilder().add_response(
        cert=x509.load_der_x509_certificate(leaf.der),
        issuer=issuer,
        algorithm=hashes.SHA1(),
        cert_status=ocsp.OCSPCertStatus.GOOD,
        this_update=now - datetime.timedelta(days=2),
        next_update=now - datetime.timedelta(hours=1),
        revocation_time=None,
        revocation_reason=None,
    )
    response = builder.responder_id(ocsp.OCSPResponderEncoding.HASH, issuer).sign(key, hashes.SHA256())  # type: ignore[arg-type]
    target.write_bytes(response.public_bytes(serialization.Encoding.DER))
    return target


@dataclass
class CA:
    """A fresh test CA with its certificate and key as files."""

    ca: trustme.CA
    cert: Path
    key: Path
    directory: Path

    def issue(self, name: str, *, with_issuer: bool = False) -> Leaf:
        return issue(self.ca, self.directory, name, with_issuer=with_issuer)

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))


@pytest.fixture
def test_ca(tmp_path: Path) -> CA:
    """A CA of this test's own, its files in the test's directory."""
    ca = trustme.CA()
    cert, key = tmp_path / "ca.pem", tmp_path / "ca.key"
    ca.cert_pem.write_to_path(str(cert))
    ca.private_key_pem.write_to_path(str(key))
    return CA(ca, cert, key, tmp_path)
