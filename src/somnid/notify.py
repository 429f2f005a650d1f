"""Tell systemd how the daemon is doing: the ``sd_notify`` protocol, without libsystemd.

systemd passes ``NOTIFY_SOCKET`` (a unix datagram socket, ``@`` for the abstract namespace)
to a ``Type=notify`` service; each state is one datagram of ``KEY=value`` lines:
``READY=1`` once serving, ``STOPPING=1`` when shutdown begins, ``STATUS=...`` for
``systemctl status``, ``WATCHDOG=1`` as a keep-alive when ``WatchdogSec=`` is set.
Without ``NOTIFY_SOCKET`` (not under systemd) every call is a no-op. A failure to send is
logged and never raised: the daemon serves whether or not systemd hears it.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Mapping

log = logging.getLogger(__name__)


def _address(environ: Mapping[str, str]) -> str | None:
    address = environ.get("NOTIFY_SOCKET", "")
    if address.startswith("@"):
        return "\0" + address[1:]
    if address.startswith("/"):
        return address
    return None  # unset, or a transport this module does not speak (vsock)


def notify(*fields: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send ``fields`` (``"READY=1"``, ``"STATUS=..."``) in one datagram. True if sent."""
    address = _address(os.environ if environ is None else environ)
    if address is None or not fields:
        return False
    message = "\n".join(field.replace("\n", " ") for field in fields).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(message, address)
    except OSError as exc:
        log.warning("could not notify systemd at %s: %s", address.lstrip("\0"), exc)
        return False
    return True


class Watchdog:
    """Keep-alives for ``WatchdogSec=``: :meth:`tick` from the event loop sends ``WATCHDOG=1``
    at half the interval, so a loop that stops turning gets the daemon restarted.

    Inactive unless systemd set ``WATCHDOG_USEC`` for this process (``WATCHDOG_PID``, when
    present, must be ours).
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.interval: float | None = None
        try:
            usec = int(env.get("WATCHDOG_USEC", "0"))
            pid = int(env.get("WATCHDOG_PID", str(os.getpid())))
        except ValueError:
            usec, pid = 0, 0
        if usec > 0 and pid == os.getpid() and _address(env) is not None:
            self.interval = usec / 1_000_000 / 2
        self._environ = env
        self._last = 0.0

    @property
    def active(self) -> bool:
        return self.interval is not None

    def tick(self) -> None:
        if self.interval is None:
            return
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            notify("WATCHDOG=1", environ=self._environ)
