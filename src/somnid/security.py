"""Who may talk to somnid: the bearer token, the bind address, and the Host/Origin policy.

No HTTP here beyond header values as strings: ``somnid.api.guard`` applies the policy to
requests. The token lives in ``<data>/token`` (mode 0600) unless the config sets one; it is
generated on first start and never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from somnid.config import Settings
from somnid.errors import InvalidInput, StorageError
from somnid.store.atomic import write_atomic

log = logging.getLogger(__name__)

TOKEN_FILE = "token"
TOKEN_MODE = 0o600
_WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]"}


def token_path(data_dir: Path) -> Path:
    return data_dir / TOKEN_FILE


def read_token_file(path: Path) -> str | None:
    """The token stored at ``path``, or None when there is none (or it is empty)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read the token file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError:
        raise StorageError(f"the token file {path} is not text: fix it or move it away") from None
    return text or None


def load_or_create_token(settings: Settings) -> str:
    """The token requests must carry: the configured one, else ``<data>/token``, created
    (0600) on first start. A token file others can read is tightened to 0600."""
    if settings.token is not None:
        configured = settings.token.get_secret_value().strip()
        if not configured:
            raise InvalidInput("the configured token is empty", code="invalid_token")
        return configured
    path = token_path(settings.data_dir)
    existing = read_token_file(path)
    if existing is not None:
        _tighten(path)
        return existing
    token = write_new_token(path)
    log.info("generated a bearer token into %s", path)
    return token


def write_new_token(path: Path) -> str:
    """A new random token into ``path`` (0600, atomically): the one writer of the token file
    (first start and ``somnid token --rotate``)."""
    token = secrets.token_urlsafe(32)
    write_atomic(path, f"{token}\n".encode(), mode=TOKEN_MODE)
    return token


def _tighten(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        log.warning("token file %s was readable by others (%o); now 0600", path, mode)
        os.chmod(path, TOKEN_MODE)


def token_matches(expected: str, presented: str | None) -> bool:
    """Constant-time comparison; None (no token sent) never matches."""
    if presented is None:
        return False
    return hmac.compare_digest(expected.encode(), presented.encode())


# The CLI sends a fresh challenge with its token-less health probe; somnid answers the proof
# that it holds the token, for the address and port the probe reached. Only then does the
# CLI send the token: whatever else listens on the port (another user's process), or
# relays to it from another address (``[::1]:PORT`` forwarding to ``127.0.0.1:PORT``),
# never receives it.
CHALLENGE_HEADER = "Somnid-Challenge"
PROOF_HEADER = "Somnid-Proof"
CHALLENGE_PATTERN = r"^[A-Za-z0-9_-]{16,128}$"


def token_proof(token: str, challenge: str, host: str, port: int) -> str:
    """HMAC-SHA256 of the challenge and the address the connection reached (as the server's
    socket saw it), keyed with the token: only a holder of the token can compute it, and a
    proof made for somnid's real address does not fit the one a relay listens on."""
    message = f"somnid-proof-v2\n{challenge}\n{canonical_host(host)}\n{port}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def canonical_host(host: str) -> str:
    """One spelling of an IP address (``::ffff:127.0.0.1`` is ``127.0.0.1``)."""
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return host.casefold()
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def proof_matches(token: str, challenge: str, host: str, port: int, presented: str | None) -> bool:
    if presented is None:
        return False
    expected = token_proof(token, challenge, host, port)
    return hmac.compare_digest(expected.encode(), presented.strip().encode())


DATA_DIR_ID_PREFIX = "id:"


def data_dir_id(data_dir: Path) -> str:
    """What ``/v1/health`` shows a caller without the token instead of the data dir's path:
    a digest of the resolved path, enough for the CLI to tell whether a daemon serves the
    data dir it was given, without telling anyone where the data is."""
    resolved = str(Path(data_dir).expanduser().resolve())
    digest = hashlib.sha256(b"somnid-data-dir\n" + os.fsencode(resolved)).hexdigest()
    return DATA_DIR_ID_PREFIX + digest[:24]


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value."""
    if authorization is None:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(settings: Settings) -> None:
    """Refuse to listen on a non-loopback address unless ``allow_non_loopback`` is set."""
    if is_loopback(settings.host) or settings.allow_non_loopback:
        return
    raise InvalidInput(
        f"refusing to bind {settings.host!r}: it is not a loopback address. Anyone who can "
        "reach it could try the token. Set allow_non_loopback = true (or pass "
        "--allow-non-loopback) if that is really meant.",
        code="unsafe_bind",
    )


def _host_name(value: str) -> str | None:
    """The host part of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``)."""
    value = value.strip().lower()
    if not value:
        return None
    try:
        name = urlsplit(f"//{value}").hostname
    except ValueError:
        return None
    return name.rstrip(".") if name else None


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which ``Host`` and ``Origin`` values a request may carry.

    Host: loopback names, the bound host (unless it is a wildcard), and ``allowed_hosts``.
    This refuses DNS rebinding: a page at ``evil.example`` resolved to 127.0.0.1 still sends
    ``Host: evil.example``. Origin: absent (not a browser), the daemon's own origin (the
    Swagger UI), or one of ``allowed_origins``; a cross-site page is refused.
    """

    hosts: frozenset[str]
    origins: frozenset[str]

    @classmethod
    def from_settings(cls, settings: Settings) -> HostPolicy:
        hosts = {name.lower().strip("[]") for name in settings.allowed_hosts}
        if settings.host not in _WILDCARD_HOSTS:
            hosts.add(settings.host.lower().strip("[]"))
        return cls(frozenset(hosts), frozenset(_origins(settings.allowed_origins)))

    def host_allowed(self, host_header: str | None) -> bool:
        if host_header is None:
            return False
        name = _host_name(host_header)
        if name is None:
            return False
        return is_loopback(name) or name in self.hosts

    def origin_allowed(self, origin: str | None, host_header: str | None) -> bool:
        if origin is None:
            return True
        normalized = _normalize_origin(origin)
        if normalized is None:
            return False
        if normalized in self.origins:
            return True
        # Same origin: the page was served by this daemon (the Swagger UI), whose Host
        # has passed the host check already.
        if host_header is None:
            return False
        _scheme, _, authority = normalized.partition("://")
        return authority == host_header.strip().lower()


def _normalize_origin(origin: str) -> str | None:
    value = origin.strip().lower().rstrip("/")
    if value in ("", "null"):
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def _origins(values: Iterable[str]) -> Iterable[str]:
    for value in values:
        normalized = _normalize_origin(value)
        if normalized is not None:
            yield normalized
