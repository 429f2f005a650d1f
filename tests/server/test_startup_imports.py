"""What a daemon imports before it answers: not the model converter's onnx package (0.8 s on a
slow host, needed only to convert the model once), not psycopg for the SQLite index."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("onnx", "psycopg")

PROBE = """
import sys
import somnid.server.daemon
from somnid.config import Settings
from somnid.embed.loading import load_early
from somnid.recall.embedding import EmbedWorker
from somnid.recall.system import open_index
import pathlib, tempfile
with tempfile.TemporaryDirectory() as tmp:
    settings = Settings(data_dir=pathlib.Path(tmp), embed={"provider": "local"})
    index = open_index(settings, pathlib.Path(tmp) / "index")
    worker = EmbedWorker(settings.embed, pathlib.Path(tmp) / "models", index)
    worker.loads_quickly  # where the model lives: asked on every start
    assert load_early(settings.embed, pathlib.Path(tmp) / "models") is None  # so does serve
    index.close()
print(" ".join(sorted(name for name in sys.modules if name.split(".")[0] in HEAVY)))
"""


def test_the_start_path_imports_neither_the_converter_nor_postgres() -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"imported at start: {result.stdout.strip()}"
