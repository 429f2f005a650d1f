"""somnid's settings: defaults, then a TOML file, then ``SOMNID_*`` environment variables.

Pure: building a :class:`Settings` reads only what it is told to read; nothing here creates
directories or configures logging. Only entry points (the CLI) call :func:`load_settings`.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from somnid.config_checks import (
    as_given,
    check_origin,
    environment_error,
    explain,
    is_host,
    misnamed_variable,
    toml_error,
)
from somnid.dream.quiet import QuietWindow
from somnid.errors import InvalidInput
from somnid.memory.clock import resolve_timezone
from somnid.memory.scrub import check_patterns

DEFAULT_PORT = 7373


def xdg_data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def xdg_config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def default_config_path() -> Path:
    return xdg_config_home() / "somnid" / "config.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @field_validator("*", mode="before")
    @classmethod
    def _as_given(cls, value: object, info: ValidationInfo) -> object:
        return as_given(cls.model_fields[str(info.field_name)].annotation, value)


class CaptureSettings(_Section):
    """Session capture (the original's ``capture.*``)."""

    enabled: bool = True
    max_message_chars: int = Field(4000, ge=100, le=1_000_000)
    log_max_bytes: int = Field(256 * 1024, ge=4096, le=4 * 1024 * 1024)
    """With a batch past it (``max_body_bytes`` at most) a part stays under the 8 MiB every
    reader of a log reads: a larger part's lines vanished from search and scrub (a probe)."""
    scrub_patterns: list[str] = Field(default_factory=list)

    @field_validator("scrub_patterns", mode="after")
    @classmethod
    def _check_patterns(cls, values: list[str]) -> list[str]:
        try:
            check_patterns(values)
        except re.error as exc:
            raise ValueError(f"capture.scrub_patterns: {exc}") from exc
        return values


class InjectSettings(_Section):
    """Resident prompt sections (the original's ``inject.*``)."""

    identity: bool = True
    intentions: bool = True
    discipline: bool = True
    profile_chars: int = Field(4000, ge=200, le=1_000_000)
    """Of each profile in the identity section, at most this many characters (cut at a line's
    end; a note says how much more there is): a profile grown by hand to megabytes would be
    sent with every turn."""


class AssocSettings(_Section):
    """Associative hints (the original's ``assoc.*``)."""

    enabled: bool = True
    pre_step: bool = True
    post_execute: bool = True
    threshold: float = Field(0.52, ge=0.0, le=10.0)
    gap: float = Field(0.1, ge=0.0, le=10.0)
    max_items: int = Field(2, ge=1, le=10)
    token_budget: int = Field(400, ge=50, le=10_000)
    max_sessions: int = Field(10_000, ge=10)


class ToolsSettings(_Section):
    """The agent's memory tools (the original's ``tools.*``)."""

    enabled: bool = True
    conversation_char_budget: int = Field(12_000, ge=500)


class OpenAISettings(_Section):
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"


YEAR_MS = 366 * 24 * 60 * 60 * 1000  # the longest wait a schedule takes: a time, not a count


class DreamSettings(_Section):
    """Consolidation while asleep (the original's ``dream.*``)."""

    enabled: bool = True
    idle_ms: int = Field(15 * 60 * 1000, ge=0, le=YEAR_MS)
    max_interval_ms: int = Field(6 * 60 * 60 * 1000, ge=0, le=YEAR_MS)
    min_pending_logs: int = Field(1, ge=0)
    llm: Literal["bridge", "callback", "openai", "off"] = "bridge"
    mode: Literal["pipeline", "agentic"] = "pipeline"
    max_tokens: int = Field(1024, ge=64, le=32_768)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    frequency_penalty: float = Field(0.3, ge=-2.0, le=2.0)
    window_tokens: int = Field(1200, ge=200, le=32_000)
    by_speaker: bool = True
    """Pipeline mode: in a log where people talk among themselves (no agent speaks), ask
    about each person's own lines apart, so what a memory says of someone rests on what
    they said (a whole exchange is what small models misattribute)."""
    max_candidates: int = Field(8, ge=1, le=50)
    max_iterations: int = Field(60, ge=1, le=1000)
    max_logs: int = Field(5, ge=1, le=100)
    token_budget: int = Field(200_000, ge=1000)
    request_timeout_s: float = Field(120.0, gt=0, le=86_400)
    request_timeout_per_1k_tokens_s: float = Field(300.0, ge=0, le=86_400)
    """Pipeline requests wait this long per thousand tokens (prompt and answer cap), and
    never less than ``request_timeout_s``: a long window on a slow machine is not lost to
    a timeout meant for a short one."""
    callback_url: str | None = None
    openai: OpenAISettings = OpenAISettings()
    quiet_windows: list[str] = Field(default_factory=list)

    @field_validator("quiet_windows", mode="after")
    @classmethod
    def _check_windows(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                QuietWindow.parse(value)
            except InvalidInput as exc:
                raise ValueError(exc.detail) from None
        return values


class EmbedSettings(_Section):
    """Embeddings for recall (the original's ``embed.*``)."""

    provider: Literal["local", "http", "off"] = "local"
    model_dir: Path | None = None
    base_url: str | None = None
    model: str | None = None

    api_key_env: str = "SOMNID_EMBED_API_KEY"
    dim: int | None = None
    threads: int = Field(2, ge=1, le=64)
    # Texts per model call (local; default 1: each text alone) or per request (http; 32).
    batch_size: int | None = Field(None, ge=1, le=1024)


class RecallSettings(_Section):
    """Hybrid scoring: every weight of the fused score."""

    vector_weight: float = Field(0.6, ge=0.0, le=10.0)
    keyword_weight: float = Field(0.4, ge=0.0, le=10.0)
    literal_boost: float = Field(0.2, ge=0.0, le=10.0)
    cos_floor: float = Field(0.78, ge=-1.0, le=1.0)
    cos_span: float = Field(0.12, gt=0.0, le=2.0)
    link_spread: float = Field(0.6, ge=0.0, le=1.0)
    candidates: int = Field(60, ge=5, le=2000)
    name_weight: float = Field(3.0, ge=0.0, le=100.0)
    description_weight: float = Field(2.0, ge=0.0, le=100.0)
    tags_weight: float = Field(2.0, ge=0.0, le=100.0)
    body_weight: float = Field(1.0, ge=0.0, le=100.0)
    context_weight: float = Field(0.5, ge=0.0, le=100.0)
    fusion: Literal["minmax", "rrf", "calibrated"] = "minmax"
    rrf_k: int = Field(60, ge=1, le=1000)
    time_boost: float = Field(0.4, ge=0.0, le=10.0)
    time_bound: float = Field(0.5, ge=0.0, le=1.0)
    speaker_boost: float = Field(0.05, ge=0.0, le=10.0)
    turn_context: float = Field(0.25, ge=0.0, le=1.0)
    brief_turn_penalty: float = Field(0.1, ge=0.0, le=1.0)
    neighbour_spread: float = Field(0.0, ge=0.0, le=1.0)
    question_penalty: float = Field(0.3, ge=0.0, le=1.0)
    prf_weight: float = Field(0.0, ge=0.0, le=1.0)
    prf_docs: int = Field(3, ge=1, le=20)
    prf_terms: int = Field(6, ge=0, le=50)
    mmr_lambda: float = Field(1.0, ge=0.0, le=1.0)
    archive: bool = True
    watch: bool = True


class IndexSettings(_Section):
    """Where the derived index lives: SQLite in the data dir, or a PostgreSQL server."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    """``postgres`` needs the ``postgres`` extra, a server with pgvector and :attr:`dsn`."""
    dsn: str | None = None
    """A libpq connection string or URL (``postgresql://somnid@db.lan/somnid``). Keep the
    password out of it: libpq reads it from ``~/.pgpass`` (or ``PGPASSFILE``)."""
    source: str | None = None
    """This daemon's name in a shared index: the rows it derived carry it, and it deletes
    only those. Default: the host name and the data dir."""
    connect_timeout_s: float = Field(3.0, gt=0.0, le=60.0)
    query_timeout_s: float = Field(15.0, gt=0.0, le=3600.0)
    """A query or write transaction the server has not answered in this long is given up
    (a stopped server hangs no request): 503 ``index_unavailable``."""
    ef_search: int = Field(100, ge=10, le=1000)

    @field_validator("dsn", mode="after")
    @classmethod
    def _check_dsn(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @model_validator(mode="after")
    def _check_postgres(self) -> IndexSettings:
        if self.backend != "postgres":
            return self
        if self.dsn is None:
            raise ValueError("index.backend = postgres needs index.dsn (SOMNID_INDEX__DSN)")
        try:  # the ``postgres`` extra: without it the daemon says so at start
            from psycopg import ProgrammingError, conninfo
        except ImportError:
            return self
        try:
            conninfo.conninfo_to_dict(self.dsn)
        except ProgrammingError:
            raise ValueError(
                "index.dsn is neither a libpq connection string (host=… dbname=…) nor a"
                " postgresql:// URL that libpq can read"
            ) from None
        return self


class MemorySettings(_Section):
    """The memory lifecycle: reinforcement, decay, retirement, intentions."""

    retire_below: float = Field(0.2, ge=0.0, le=1.0)
    intention_expiry_days: int | None = Field(None, ge=1)


class HistorySettings(_Section):
    """The git history of memory/ and skills/: a commit per write batch, dream, hand edit."""

    enabled: bool = True
    batch_window_s: float = Field(2.0, ge=0.0, le=60.0)


class SyncSettings(_Section):
    """One memory on several machines: the history repository synced through a git remote."""

    remote: str | None = None
    """A git URL (ssh, https or a path) of a repository all machines share; None: no sync.
    Credentials stay with git (an ssh agent, a credential helper), never in logs."""
    interval_s: float = Field(300.0, ge=1.0, le=86_400.0)
    """A sync (fetch, merge, push) every this many seconds, and before each dream."""
    push_after_s: float = Field(10.0, ge=0.0, le=3600.0)
    """A write goes out this many seconds later (one round for the writes of that while);
    0: only on the interval, before and after dreams, and when asked."""
    timeout_s: float = Field(120.0, ge=1.0, le=3600.0)
    """A fetch or push that has not ended after this long is stopped (a hung remote)."""

    @field_validator("remote", mode="after")
    @classmethod
    def _check_remote(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or value.startswith("-")):
            raise ValueError("sync.remote must be a git URL or a path")
        return value or None


class Settings(BaseSettings):
    """Every setting somnid has. See ``docs/configuration.md``."""

    model_config = SettingsConfigDict(
        env_prefix="SOMNID_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
    )

    data_dir: Path = Field(default_factory=lambda: xdg_data_home() / "somnid")
    host: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    allow_non_loopback: bool = False
    token: SecretStr | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    timezone: str = "local"
    prompt_lang: Literal["zh", "en"] = "en"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["auto", "json", "text"] = "auto"
    max_body_bytes: int = Field(1024 * 1024, ge=1024, le=4 * 1024 * 1024)
    shutdown_timeout_s: int = Field(10, ge=1, le=300)
    header_timeout_s: float = Field(10.0, gt=0, le=300)
    body_timeout_s: float = Field(30.0, gt=0, le=3600)
    max_connections: int = Field(256, ge=4, le=65536)
    write_timeout_s: float = Field(30.0, gt=0, le=3600)

    capture: CaptureSettings = CaptureSettings()
    inject: InjectSettings = InjectSettings()
    assoc: AssocSettings = AssocSettings()
    tools: ToolsSettings = ToolsSettings()
    dream: DreamSettings = DreamSettings()
    embed: EmbedSettings = EmbedSettings()
    recall: RecallSettings = RecallSettings()
    index: IndexSettings = IndexSettings()
    memory: MemorySettings = MemorySettings()
    history: HistorySettings = HistorySettings()
    sync: SyncSettings = SyncSettings()

    @field_validator("host", mode="after")
    @classmethod
    def _check_host(cls, value: str) -> str:
        # `--host 127.0.0.1:7373` ended each CLI command in a traceback; `[::1]` is `::1`.
        value = value[1:-1] if value[:1] == "[" and value[-1:] == "]" else value
        if not is_host(value):
            raise ValueError(f"host {value[:80]!r} is not an IP address nor a host name")
        return value

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand_data_dir(cls, value: Path) -> Path:
        # Absolute from here on: a relative one (``--data-dir d1``) named other folders to
        # git, SQLite's URIs and the daemon's state file than the one the daemon serves.
        return value.expanduser().absolute()

    @field_validator("timezone", mode="after")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        resolve_timezone(value)  # ValueError: unknown time zone
        return value

    @field_validator("token", mode="after")
    @classmethod
    def _check_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("token is empty: set one, or leave it out for a generated one")
        return value

    @field_validator("allowed_origins", mode="after")
    @classmethod
    def _check_origins(cls, values: list[str]) -> list[str]:
        return [check_origin(value) for value in values]

    @field_validator("*", mode="before")
    @classmethod
    def _as_given(cls, value: object, info: ValidationInfo) -> object:
        return as_given(cls.model_fields[str(info.field_name)].annotation, value)

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))


class ConfigFileError(ValueError):
    """The configuration file could not be read."""


def load_settings(config_path: Path | None = None, **overrides: Any) -> Settings:
    """Build settings: defaults < TOML file < ``SOMNID_*`` environment < ``overrides``.

    ``config_path`` None means the default file in the XDG config dir, if it exists.
    An explicitly named file that does not exist is an error.
    """
    if (misnamed := misnamed_variable(Settings.model_fields)) is not None:
        raise ConfigFileError(misnamed)
    if config_path is None:
        candidate = default_config_path()
        path: Path | None = candidate if candidate.is_file() else None
    else:
        path = config_path.expanduser()
        if path.is_dir():
            raise ConfigFileError(f"config file {path} is a folder; name the TOML file in it")
        if not path.is_file():
            raise ConfigFileError(f"config file not found: {path}")
    if path is None:
        try:
            return Settings(**overrides)
        except ValidationError as exc:
            raise ConfigFileError(explain(exc, None, {}, overrides)) from None
        except SettingsError as exc:
            raise ConfigFileError(environment_error(exc)) from None

    class FileSettings(Settings):
        model_config = SettingsConfigDict(toml_file=path)

    try:
        return _beside(FileSettings(**overrides), path, overrides)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(toml_error(path, exc)) from exc
    except UnicodeDecodeError:
        raise ConfigFileError(f"{path}: not UTF-8 text (a TOML file is)") from None
    except OSError as exc:  # unreadable: its mode, an I/O error
        raise ConfigFileError(f"{path} cannot be read: {exc.strerror or exc}") from None
    except SettingsError as exc:
        raise ConfigFileError(environment_error(exc)) from None
    except ValidationError as exc:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
        raise ConfigFileError(explain(exc, path, document, overrides)) from None


def _beside(settings: Settings, path: Path, overrides: dict[str, Any]) -> Settings:
    """A relative ``data_dir`` in the file is read from the file's folder: from the shell's
    working folder, ``serve``, ``doctor`` and the systemd unit each found another one."""
    if "data_dir" in overrides or "SOMNID_DATA_DIR" in os.environ:
        return settings
    with open(path, "rb") as handle:
        given = tomllib.load(handle).get("data_dir")
    if isinstance(given, str) and given.strip() and not Path(given).expanduser().is_absolute():
        settings.data_dir = path.parent.absolute() / given
    return settings
