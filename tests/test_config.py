"""Settings come from defaults, then a TOML file, then SOMNID_* variables; docs list them all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from somnid.config import DEFAULT_PORT, ConfigFileError, Settings, load_settings

DOCS = Path(__file__).parents[1] / "docs" / "configuration.md"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("SOMNID_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))


def test_defaults(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings.data_dir == tmp_path / "share" / "somnid"
    assert settings.host == "127.0.0.1"
    assert settings.port == DEFAULT_PORT
    assert settings.capture.max_message_chars == 4000
    assert settings.assoc.threshold == 0.52
    assert settings.assoc.gap == 0.1
    assert settings.assoc.max_items == 2
    assert settings.dream.idle_ms == 15 * 60 * 1000
    assert settings.dream.max_interval_ms == 6 * 3600 * 1000
    assert settings.dream.max_iterations == 60
    assert settings.embed.provider == "local"


def test_toml_then_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "somnid.toml"
    config.write_text(
        'data_dir = "~/mem"\nport = 9000\n[assoc]\nthreshold = 0.6\n[dream.openai]\nmodel = "m"\n'
    )
    settings = load_settings(config)
    assert settings.data_dir == Path("~/mem").expanduser()
    assert settings.port == 9000
    assert settings.assoc.threshold == 0.6
    assert settings.dream.openai.model == "m"
    monkeypatch.setenv("SOMNID_PORT", "9100")
    monkeypatch.setenv("SOMNID_ASSOC__THRESHOLD", "0.7")
    settings = load_settings(config)
    assert settings.port == 9100
    assert settings.assoc.threshold == 0.7
    assert settings.assoc.gap == 0.1  # untouched keys keep their defaults
    assert load_settings(config, port=9200).port == 9200


def test_default_file_in_xdg_config(tmp_path: Path) -> None:
    path = tmp_path / "config" / "somnid" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('prompt_lang = "zh"\n')
    assert load_settings().prompt_lang == "zh"


def test_bad_configuration_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError):
        load_settings(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("port = \n")
    with pytest.raises(ConfigFileError):
        load_settings(broken)
    typo = tmp_path / "typo.toml"
    typo.write_text("[assoc]\ntreshold = 0.5\n")
    # One line that names the file, the key and its value (not pydantic's text).
    with pytest.raises(ConfigFileError) as refused:
        load_settings(typo)
    assert str(refused.value) == f"{typo}: assoc.treshold = 0.5: Extra inputs are not permitted"
    with pytest.raises(ValidationError):
        Settings(port=70000)
    # A session log's part and the batch that passes its size stay readable (8 MiB): above,
    # its lines vanished from search and scrub (a probe).
    with pytest.raises(ValidationError):
        Settings(capture={"log_max_bytes": 20_000_000})
    with pytest.raises(ValidationError):
        Settings(max_body_bytes=20_000_000)


def _keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys.extend(_keys(annotation, f"{prefix}{name}."))
        else:
            keys.append(f"{prefix}{name}")
    return keys


def test_every_setting_is_documented() -> None:
    text = DOCS.read_text()
    missing = [key for key in _keys(Settings) if f"`{key}`" not in text]
    assert missing == []


def test_every_original_key_has_a_counterpart() -> None:
    original = [
        "dataDir", "capture.enabled", "capture.maxMessageChars", "inject.identity",
        "inject.intentions", "inject.discipline", "assoc.enabled", "assoc.preStep",
        "assoc.postExecute", "assoc.threshold", "assoc.gap", "assoc.maxItems", "tools.enabled",
        "dream.enabled", "dream.idleMs", "dream.maxIntervalMs", "dream.minPendingLogs",
        "dream.llm", "dream.maxIterations", "embed.provider", "embed.baseUrl", "logLevel",
        "dream.openai.baseUrl", "dream.openai.apiKeyEnv", "dream.openai.model",
    ]  # fmt: skip
    text = DOCS.read_text()
    assert [key for key in original if f"`{key}`" not in text] == []


@pytest.mark.parametrize(
    ("index", "says"),
    [
        ({"backend": "postgres"}, "index.backend = postgres needs index.dsn"),
        ({"backend": "postgres", "dsn": "  "}, "index.backend = postgres needs index.dsn"),
        (
            {"backend": "postgres", "dsn": 'host=/x password=hunter2 "'},
            "index.dsn is neither a libpq connection string",
        ),
    ],
)
def test_a_postgres_index_without_a_readable_dsn_is_refused_at_start(
    tmp_path: Path, index: dict[str, str], says: str
) -> None:
    # The daemon bound its port, then failed in its lifespan with a traceback (exit 1, and
    # systemd restarted it), or started and answered 500 on health and recall.
    with pytest.raises(ValidationError, match=says) as refused:
        Settings(data_dir=tmp_path, index=index)
    assert "hunter2" not in str(refused.value).split("input_value")[0]


@pytest.mark.parametrize("host", ["999.1.1.1", "127.0.0.1:7373", "a" * 300, "", "a b", "-x"])
def test_a_host_that_is_no_address_nor_name_is_refused(tmp_path: Path, host: str) -> None:
    # The CLI built its URL from it and ended in a traceback (httpx.InvalidURL, idna).
    with pytest.raises(ValidationError, match="is not an IP address nor a host name"):
        Settings(data_dir=tmp_path, host=host)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "box.lan", "bücher.de"])
def test_addresses_and_host_names_pass(tmp_path: Path, host: str) -> None:
    assert Settings(data_dir=tmp_path, host=host).host == host


def test_an_address_in_brackets_as_urls_write_it_is_the_address(tmp_path: Path) -> None:
    """An ops probe: `--host '[::1]'` was "not an IP address nor a host name"."""
    assert Settings(data_dir=tmp_path, host="[::1]").host == "::1"


def test_a_config_file_that_cannot_be_read_says_so_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="is a folder"):
        load_settings(tmp_path)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"port = 1\n# caf\xe9\n")
    with pytest.raises(ConfigFileError, match=r"latin\.toml: not UTF-8 text"):
        load_settings(latin)


def test_a_list_in_the_environment_that_is_no_json_names_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOMNID_ALLOWED_HOSTS", "foo")
    with pytest.raises(ConfigFileError, match=r"SOMNID_ALLOWED_HOSTS cannot be read: .* is JSON"):
        load_settings(None, data_dir=tmp_path)


def test_a_dsn_in_a_config_file_is_never_shown_in_its_error(tmp_path: Path) -> None:
    # The check of a postgres index is the section's: its error printed the whole section,
    # the DSN's password included.
    path = tmp_path / "somnid.toml"
    path.write_text('[index]\nbackend = "postgres"\ndsn = "host=db password=hunter2 dbname"\n')
    with pytest.raises(ConfigFileError, match=r"index\.dsn is neither") as refused:
        load_settings(path, data_dir=tmp_path)
    assert "hunter2" not in str(refused.value)
    path.write_text("[index]\ndsn = 5\n")
    with pytest.raises(ConfigFileError) as refused:
        load_settings(path, data_dir=tmp_path)
    assert "dsn = (not shown)" in str(refused.value)


@pytest.mark.parametrize(
    ("variable", "says"),
    [
        (
            "SOMNID_DREAMS__IDLE_MS",
            "no section of the settings is named 'dreams' (did you mean SOMNID_DREAM__",
        ),
        ("SOMNID_DREAM_IDLE_MS", "joined with two underscores, SOMNID_DREAM__IDLE_MS"),
    ],
)
def test_a_misspelled_section_in_the_environment_is_refused(
    monkeypatch: pytest.MonkeyPatch, variable: str, says: str
) -> None:
    """A probe: SOMNID_DREAMS__IDLE_MS=5 started somnid with its default, and nothing said so."""
    monkeypatch.setenv(variable, "5")
    with pytest.raises(ConfigFileError, match=re.escape(says)):
        load_settings()


def test_a_tool_s_own_somnid_variable_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("SOMNID_EMBED_API_KEY", "SOMNID_TEST_WORKERS", "SOMNID_RUN"):
        monkeypatch.setenv(variable, "x")
    assert load_settings().port == DEFAULT_PORT


def test_a_relative_data_dir_in_the_file_is_read_from_the_file_s_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe: serve, doctor and the systemd unit each resolved it from their own working
    folder, three data dirs for one configuration."""
    folder = tmp_path / "etc"
    folder.mkdir()
    config = folder / "somnid.toml"
    config.write_text('data_dir = "memory"\n')
    monkeypatch.chdir(tmp_path)
    assert load_settings(config).data_dir == folder / "memory"
    assert load_settings(config, data_dir=Path("given")).data_dir == tmp_path / "given"
    monkeypatch.setenv("SOMNID_DATA_DIR", "env")
    assert load_settings(config).data_dir == tmp_path / "env"


def test_a_config_file_with_a_byte_order_mark_says_so(tmp_path: Path) -> None:
    """An ops probe: a file Notepad saved as UTF-8 was "Invalid statement (at line 1,
    column 1)"."""
    config = tmp_path / "somnid.toml"
    config.write_bytes(b"\xef\xbb\xbfport = 9000\n")
    with pytest.raises(ConfigFileError, match="begins with a byte-order mark"):
        load_settings(config)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("port = true\n", "port"),
        ("[recall]\nvector_weight = false\n", "recall.vector_weight"),
        ("[embed]\ndim = true\n", "embed.dim"),  # int | None
        ("[dream]\ntemperature = true\n", "dream.temperature"),
    ],
)
def test_true_or_false_for_a_number_is_refused(tmp_path: Path, text: str, key: str) -> None:
    # pydantic read them as 1 and 0: `port = true` bound port 1, a weight `false` turned off.
    config = tmp_path / "flag.toml"
    config.write_text(text)
    with pytest.raises(ConfigFileError, match=rf"{re.escape(key)} = .*: a number is wanted"):
        load_settings(config)


def test_true_and_false_stay_flags(tmp_path: Path) -> None:
    config = tmp_path / "flags.toml"
    config.write_text("allow_non_loopback = false\n[recall]\narchive = false\n")
    settings = load_settings(config)
    assert settings.allow_non_loopback is False and settings.recall.archive is False


def test_an_empty_folder_is_refused_not_read_as_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "empty.toml"
    config.write_text('[embed]\nmodel_dir = ""\n')
    with pytest.raises(ConfigFileError, match=r"embed\.model_dir = '': empty: name a folder"):
        load_settings(config)
    monkeypatch.setenv("SOMNID_DATA_DIR", " ")
    with pytest.raises(ConfigFileError, match=r"SOMNID_DATA_DIR=' ': empty: name a folder"):
        load_settings(None)


def test_a_bad_key_in_a_section_given_as_json_names_its_variable_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "good.toml"
    config.write_text("port = 7400\n")
    monkeypatch.setenv("SOMNID_RECALL", '{"candidates": 1}')
    monkeypatch.setenv("SOMNID_INDEX", '{"dsn": 5}')
    with pytest.raises(ConfigFileError) as refused:
        load_settings(config)
    said = str(refused.value)
    assert "recall.candidates = 1 (in SOMNID_RECALL): Input should be greater" in said
    assert "index.dsn = (not shown) (in SOMNID_INDEX)" in said
    assert "good.toml" not in said


def test_a_file_s_bad_key_is_the_file_s_beside_a_section_given_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A review: the section's variable was named for any key of its section.
    config = tmp_path / "c.toml"
    config.write_text("[recall]\ncandidates = 1\n")
    monkeypatch.setenv("SOMNID_RECALL", '{"archive": false}')
    with pytest.raises(ConfigFileError) as refused:
        load_settings(config)
    assert str(refused.value).startswith(f"{config}: recall.candidates = 1: Input should be")


def test_a_section_s_json_holding_a_dsn_is_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    given = '{"backend": "postgres", "dsn": "postgresql://u:hunter2@h/db?x=%zz bad=="}'
    monkeypatch.setenv("SOMNID_INDEX", given)
    with pytest.raises(ConfigFileError) as refused:
        load_settings(None)
    assert "SOMNID_INDEX=(not shown)" in str(refused.value)
    assert "hunter2" not in str(refused.value)
