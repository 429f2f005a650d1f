"""The commands' HTTP client for the running daemon: where it is, which token to send, and
one-line errors for what goes wrong (nobody answers, 401, a problem+json answer).

The token is sent only to a listener that proved it holds it: before the first request
with the token, a token-less health probe carries a fresh challenge, and the answer must
name this data dir and carry the proof (:func:`somnid.security.token_proof`) for this port.
Another program on the port (another user's, squatting it while somnid is down) gets a
health probe and nothing else."""

from __future__ import annotations

import secrets
import shlex
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

from somnid.cli._common import EXIT_FAILED, EXIT_NOT_RUNNING, CliError, lock_holder
from somnid.config import DEFAULT_PORT, Settings
from somnid.errors import StorageError
from somnid.security import (
    CHALLENGE_HEADER,
    DATA_DIR_ID_PREFIX,
    PROOF_HEADER,
    data_dir_id,
    proof_matches,
    read_token_file,
    token_path,
)

_WILDCARDS = {"", "0.0.0.0", "::", "[::]"}


def base_url(settings: Settings) -> str:
    """The daemon's URL from ``host`` and ``port``; a wildcard bind is reached on loopback."""
    host = settings.host.strip("[]")
    if host in _WILDCARDS or host == "::":
        host = "::1" if ":" in settings.host else "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


def not_running(settings: Settings) -> CliError:
    holder = lock_holder(settings.data_dir, may_lock=False)
    if holder is not None:
        # A daemon starting (it reads every file first; 19 s with 6,400 waiting logs in a
        # probe) or listening elsewhere: "start it" would end in "already running".
        who = f"somnid (pid {holder})" if holder > 0 else "a somnid"
        return CliError(
            f"{who} holds the data dir {settings.data_dir} but does not answer at "
            f"{base_url(settings)}: it may still be starting (try again in a moment), or "
            "listen on another port (`somnid doctor` says which)",
            EXIT_NOT_RUNNING,
        )
    return CliError(
        f"somnid is not running at {base_url(settings)} (start it with "
        f"`{serve_command(settings)}`, or `systemctl --user start somnid` if it is installed "
        "as a service)",
        EXIT_NOT_RUNNING,
    )


def serve_command(settings: Settings) -> str:
    """``somnid serve`` for these settings' data dir, address and port: as written, the plain
    command started a daemon on the default ones, not the one asked about. (A ``--config``
    given is not known here: the message's reader gave it.)"""
    words = ["somnid", "serve"]
    if settings.data_dir != Settings.model_fields["data_dir"].get_default(
        call_default_factory=True
    ):
        words += ["--data-dir", shlex.quote(str(settings.data_dir))]
    if settings.host != Settings.model_fields["host"].default:
        words += ["--host", shlex.quote(settings.host)]
    if settings.port != DEFAULT_PORT:
        words += ["--port", str(settings.port)]
    return " ".join(words)


def same_dir(a: str | Path, b: str | Path) -> bool:
    """Whether health's ``dataDir`` (a path, or the id it shows a caller without the
    token) names data dir ``b``."""
    if isinstance(a, str) and a.startswith(DATA_DIR_ID_PREFIX):
        return a == data_dir_id(Path(b))
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def dir_shown(value: str) -> str:
    """Health's ``dataDir`` for a message: without the token it is an id, no path."""
    return "another data dir" if value.startswith(DATA_DIR_ID_PREFIX) else value


_T = TypeVar("_T")


class DaemonClient:
    """Talks to the daemon that ``settings`` point at. Every failure is a :class:`CliError`."""

    def __init__(self, settings: Settings, *, timeout: float | None = 10.0) -> None:
        self.settings = settings
        self.url = base_url(settings)
        self.timeout = timeout  # for each read, and for a whole answer (see _whole)
        self._http = httpx.Client(base_url=self.url, timeout=timeout, trust_env=False)
        self._token: str | None = None
        self._trusted = False

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def health(self) -> dict[str, Any] | None:
        """The daemon's health (no token needed), or None when nothing answers. A port held
        by something that is not somnid is an error."""
        try:
            response = _whole(lambda: self._http.get("/v1/health", timeout=3.0), 3.0)
        except httpx.TimeoutException:
            raise self._hung() from None
        except httpx.TransportError:
            return None
        return self._as_health(response)

    def _hung(self) -> CliError:
        return CliError(
            f"{self.url} accepts connections but gave no whole answer to a health probe in "
            "3 s: somnid may be hung (a stopped process: `kill -CONT`, or restart it), or "
            "another program holds the port (`somnid doctor`)"
        )

    def _as_health(self, response: httpx.Response) -> dict[str, Any]:
        body = _json(response)
        if not isinstance(body, dict) or "version" not in body or "dataDir" not in body:
            raise CliError(
                f"{self.url} answers, but not as somnid (HTTP {response.status_code}): another "
                "program uses the port; set another `port` in the configuration"
            )
        return body

    @property
    def token(self) -> str:
        if self._token is None:
            try:
                self._token = client_token(self.settings)
            except CliError:
                if self.health() is None:  # no token because no daemon ever ran: say that
                    raise not_running(self.settings) from None
                raise
        return self._token

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None)

    def post(self, path: str, body: dict[str, Any] | None = None, **options: Any) -> Any:
        return self.request("POST", path, json=body if body is not None else {}, **options)

    def verify_listener(self) -> None:
        """Raise CliError unless the listener is somnid serving this data dir and holding
        this token (it proves that without being sent the token)."""
        if self._trusted:
            return
        token = self.token
        challenge = secrets.token_urlsafe(24)

        def probe() -> tuple[httpx.Response, Any]:
            with self._http.stream(
                "GET", "/v1/health", headers={CHALLENGE_HEADER: challenge}, timeout=3.0
            ) as response:
                # The address this connection reached, before anything else is read.
                stream = response.extensions.get("network_stream")
                reached = stream.get_extra_info("server_addr") if stream is not None else None
                response.read()
            return response, reached

        try:
            response, reached = _whole(probe, 3.0)
        except httpx.TimeoutException:
            raise self._hung() from None
        except httpx.TransportError:
            raise not_running(self.settings) from None
        health = self._as_health(response)
        withheld = "the token was not sent"
        if not same_dir(health["dataDir"], self.settings.data_dir):
            raise CliError(
                f"somnid at {self.url} serves {dir_shown(health['dataDir'])}, not "
                f"{self.settings.data_dir}; {withheld} (set the `port` that data dir's daemon "
                "uses, or `data_dir`)"
            )
        host, port = (str(reached[0]), int(reached[1])) if reached else ("", self.settings.port)
        if not proof_matches(token, challenge, host, port, response.headers.get(PROOF_HEADER)):
            raise CliError(
                f"the program listening on {self.url} says it is somnid for "
                f"{self.settings.data_dir} but could not prove it holds the token from "
                f"{token_source(self.settings)}: {withheld}. Another program (maybe another "
                "user's) may hold the port, or that somnid was started with another token; "
                "see `somnid doctor`"
            )
        self._trusted = True

    def request(self, method: str, path: str, **options: Any) -> Any:
        self.verify_listener()
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            response = _whole(
                lambda: self._http.request(method, path, headers=headers, **options), self.timeout
            )
        except httpx.ConnectError:
            raise not_running(self.settings) from None
        except httpx.TimeoutException:
            raise CliError(f"somnid at {self.url} did not answer {method} {path} in time") from None
        except httpx.TransportError as exc:
            raise CliError(f"talking to somnid at {self.url} failed: {exc}") from None
        if response.status_code == 401:
            raise CliError(
                f"somnid at {self.url} refused the token (401). The token comes from "
                f"{token_source(self.settings)}; the daemon uses the one it had at start: is it "
                "serving another data dir, or was it given another token? (`somnid doctor`)"
            )
        if response.is_error:
            raise CliError(_problem(method, path, response), EXIT_FAILED)
        return _json(response)


def _whole(call: Callable[[], _T], seconds: float | None) -> _T:
    """``call``, given at most ``seconds`` for the whole answer (None: no bound). httpx bounds
    each read only: a listener that sends its answer a byte at a time held a command for
    ever. The call runs in a thread left behind when time is up (the command then ends)."""
    if seconds is None:
        return call()
    done: list[_T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(call())
        except BaseException as exc:  # raised in the caller's thread below
            failed.append(exc)

    worker = threading.Thread(target=run, name="somnid-cli-request", daemon=True)
    worker.start()
    worker.join(seconds + 1.0)  # past the per-read time-out: httpx says that one itself
    if failed:
        raise failed[0]
    if not done:
        raise httpx.ReadTimeout(f"no whole answer within {seconds:.0f} s")
    return done[0]


def client_token(settings: Settings) -> str:
    """The token to send: the configured one, else ``<data>/token``."""
    if settings.token is not None:
        return settings.token.get_secret_value().strip()
    path = token_path(settings.data_dir)
    try:
        token = read_token_file(path)
    except StorageError as exc:
        raise CliError(exc.detail) from None
    if token is None:
        what = "is empty" if path.exists() else "does not exist"
        raise CliError(
            f"no token: {path} {what} (the daemon writes it on first start; "
            "`somnid token` creates it while the daemon is stopped)"
        )
    return token


def token_source(settings: Settings) -> str:
    if settings.token is not None:
        return "the configuration (token / SOMNID_TOKEN)"
    return str(token_path(settings.data_dir))


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _problem(method: str, path: str, response: httpx.Response) -> str:
    body = _json(response)
    if isinstance(body, dict) and "detail" in body:
        code = body.get("code") or body.get("title") or ""
        detail = body["detail"]
        errors = body.get("errors")
        if isinstance(errors, list) and errors:
            detail = "; ".join(
                f"{e.get('field', '')}: {e.get('message', '')}"
                for e in errors
                if isinstance(e, dict)
            )
        return f"{method} {path} failed: {response.status_code} {code}: {detail}"
    return f"{method} {path} failed: HTTP {response.status_code}"
