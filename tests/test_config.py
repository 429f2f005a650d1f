"""Settings come from defaults, then a TOML file, then SOMNID_* variables; docs list them all."""

from __future__ import annotations

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
