"""Self-managed serving certificates, as KAI's cert-controller (open-policy-agent/cert-controller) does.

When `kai admission` gets no `--cert-dir`, `CertManager.ensure()`:

1. reads the Secret `<secret-name>` in the admission namespace (keys `ca.crt`, `tls.crt`, `tls.key`, type
   `kubernetes.io/tls`) and reuses its pair when it is readable, the serving certificate is signed by the CA,
   matches the key, names `<service>.<namespace>.svc`, and both certificates stay valid for more than 30 days;
   otherwise it generates a new CA (10 years) and serving certificate (1 year), ECDSA P-256, and writes the
   Secret (create, or update; on a write race with another replica it re-reads and takes the winner's pair);
2. writes the pair as `tls.crt` / `tls.key` into the serving directory (atomic renames; the server reloads
   files that change);
3. writes the CA into `clientConfig.caBundle` of every webhook of the ValidatingWebhookConfiguration and the
   MutatingWebhookConfiguration named `<webhook-configuration-name>` (a missing configuration is logged and
   skipped; it is retried on the next `ensure`).

Run `ensure` periodically: it is a no-op while the pair is good, and rotates it 30 days before expiry.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kai_scheduler.api.clock import Clock
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, Conflict, NotFound

log = logging.getLogger(__name__)

KEY_CA: Final = "ca.crt"
KEY_CERT: Final = "tls.crt"
KEY_KEY: Final = "tls.key"
SECRET_TYPE: Final = "kubernetes.io/tls"
DAY: Final = 86_400.0
MIN_REMAINING: Final = 30 * DAY
CA_VALIDITY: Final = 3650 * DAY
CERT_VALIDITY: Final = 365 * DAY
WEBHOOK_CONFIGURATION_RESOURCES: Final = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")
_WRITE_ATTEMPTS: Final = 3


@dataclass(frozen=True, slots=True)
class Bundle:
    """A CA and the serving certificate and key it signed, PEM-encoded."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def not_after(self) -> float:
        """POSIX seconds when the first of the CA and the serving certificate expires."""
        certs = (x509.load_pem_x509_certificate(self.ca_pem), x509.load_pem_x509_certificate(self.cert_pem))
        return min(c.not_valid_after_utc.timestamp() for c in certs)


def dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server may use for the webhook service; the `.svc` one is what it uses."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def generate(service: str, namespace: str, now: float) -> Bundle:
    """A new CA and a serving certificate for the service's DNS names (plus 127.0.0.1 names for local use)."""
    start = dt.datetime.fromtimestamp(now - 3600, dt.UTC)  # an hour back: tolerate clock skew
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{service}-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(seconds=CA_VALIDITY))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = dns_names(service, namespace)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[2])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(seconds=CERT_VALIDITY))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Bundle(
        ca.public_bytes(serialization.Encoding.PEM),
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def from_secret(secret: JSON) -> Bundle | None:
    """The bundle a Secret holds, or None when a key is missing or not base64."""
    data: Any = secret.get("data") or {}
    try:
        return Bundle(*(base64.b64decode(data[k], validate=True) for k in (KEY_CA, KEY_CERT, KEY_KEY)))
    except (KeyError, TypeError, ValueError):
        return None


def to_secret_data(bundle: Bundle) -> dict[str, str]:
    return {
        k: base64.b64encode(v).decode("ascii")
        for k, v in ((KEY_CA, bundle.ca_pem), (KEY_CERT, bundle.cert_pem), (KEY_KEY, bundle.key_pem))
    }


def problem(bundle: Bundle, service: str, namespace: str, now: float) -> str | None:
    """Why the bundle cannot serve the service for the next 30 days; None when it can."""
    try:
        ca = x509.load_pem_x509_certificate(bundle.ca_pem)
        cert = x509.load_pem_x509_certificate(bundle.cert_pem)
        key = serialization.load_pem_private_key(bundle.key_pem, password=None)
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature) as err:
        return f"unreadable or not signed by its CA ({type(err).__name__})"
    if key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) != cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo):
        return "the key does not match the certificate"
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName
        )
    except x509.ExtensionNotFound:
        sans = []
    wanted = dns_names(service, namespace)[2]
    if wanted not in sans:
        return f"the certificate does not name {wanted}"
    remaining = bundle.not_after() - now
    if remaining <= MIN_REMAINING:
        return f"expires in {remaining / DAY:.0f} days"
    return None


def write_files(bundle: Bundle, directory: Path) -> bool:
    """Write `tls.crt` and `tls.key` into `directory` (atomic renames); False when they were already there."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = False
    for name, content, mode in ((KEY_KEY, bundle.key_pem, 0o600), (KEY_CERT, bundle.cert_pem, 0o644)):
        path = directory / name
        if path.exists() and path.read_bytes() == content:
            continue
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        changed = True
    return changed


class CertManager:
    """Keeps the serving pair in a Secret, on disk, and in the webhook configurations' caBundle."""

    def __init__(
        self,
        store: ClusterStore,
        clock: Clock,
        *,
        namespace: str,
        service_name: str,
        secret_name: str,
        webhook_configuration_name: str,
        directory: Path,
    ) -> None:
        self.store = store
        self.clock = clock
        self.namespace = namespace
        self.service_name = service_name
        self.secret_name = secret_name
        self.webhook_configuration_name = webhook_configuration_name
        self.directory = directory

    @property
    def cert_file(self) -> Path:
        return self.directory / KEY_CERT

    @property
    def key_file(self) -> Path:
        return self.directory / KEY_KEY

    def ensure(self) -> Bundle:
        """Reuse or rotate the pair, write it to disk and inject the CA; return the pair in use."""
        bundle = self._secret_bundle()
        if write_files(bundle, self.directory):
            log.info("serving certificate written", extra={"directory": str(self.directory)})
        inject_ca_bundle(self.store, self.webhook_configuration_name, bundle.ca_pem)
        return bundle

    def _secret_bundle(self) -> Bundle:
        for _ in range(_WRITE_ATTEMPTS):
            try:
                secret: JSON | None = self.store.get("secrets", self.secret_name, self.namespace)
            except NotFound:
                secret = None
            current = from_secret(secret) if secret is not None else None
            why = problem(current, self.service_name, self.namespace, self.clock.now()) if current else "missing"
            if current is not None and why is None:
                return current
            bundle = generate(self.service_name, self.namespace, self.clock.now())
            log.info(
                "rotating the webhook serving certificate",
                extra={"secret": f"{self.namespace}/{self.secret_name}", "reason": why},
            )
            try:
                if secret is None:
                    self.store.create(self._secret(bundle))
                else:
                    self.store.update({**secret, "type": SECRET_TYPE, "data": to_secret_data(bundle)})
            except (AlreadyExists, Conflict):
                continue  # another replica wrote it first: take theirs
            return bundle
        raise RuntimeError(
            f"Secret {self.namespace}/{self.secret_name}: kept changing while writing the "
            f"serving certificate ({_WRITE_ATTEMPTS} attempts)"
        )

    def _secret(self, bundle: Bundle) -> JSON:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": SECRET_TYPE,
            "metadata": {"name": self.secret_name, "namespace": self.namespace, "labels": {"app": self.service_name}},
            "data": to_secret_data(bundle),
        }


def inject_ca_bundle(store: ClusterStore, name: str, ca_pem: bytes) -> int:
    """Set `caBundle` on every webhook of both configurations named `name`; return how many objects changed."""
    ca = base64.b64encode(ca_pem).decode("ascii")
    changed = 0
    for resource in WEBHOOK_CONFIGURATION_RESOURCES:
        for _ in range(_WRITE_ATTEMPTS):
            try:
                obj = store.get(resource, name)
            except NotFound:
                log.warning(
                    "webhook configuration not found; caBundle not injected",
                    extra={"resource": resource, "object_name": name},
                )
                break
            webhooks = [w for w in obj.get("webhooks") or [] if isinstance(w, dict)]
            if all((w.get("clientConfig") or {}).get("caBundle") == ca for w in webhooks):
                break
            for w in webhooks:
                w["clientConfig"] = {**(w.get("clientConfig") or {}), "caBundle": ca}
            try:
                store.update({**obj, "webhooks": webhooks})
            except Conflict:
                continue
            changed += 1
            log.info("caBundle injected", extra={"resource": resource, "object_name": name})
            break
    return changed
