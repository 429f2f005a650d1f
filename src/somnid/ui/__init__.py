"""The memory browser's files: plain HTML, CSS and JavaScript, no build step, no CDN."""

from __future__ import annotations

import importlib.resources
from pathlib import Path


def static_dir() -> Path:
    return Path(str(importlib.resources.files("somnid.ui") / "static"))
