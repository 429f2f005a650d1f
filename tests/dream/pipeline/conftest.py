"""The runtime the pipeline's tests dream in: a temp data dir, embeddings off, each window
answered whole (a module with other needs defines its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.runtime import Runtime
from tests.dream.pipeline.helpers import NOW, WHOLE


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = Settings(
        data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"}, dream=WHOLE
    )
    async with Runtime.open(settings, clock=ManualClock(NOW)) as rt:
        yield rt
