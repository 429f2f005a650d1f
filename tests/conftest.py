"""Shared fixtures: real settings on a temp data dir, the real app with its lifespan, and a
real daemon process on a free loopback port."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.embed.e5convert import install_default_model
from somnid.embed.onnx import OnnxEmbedder
from somnid.memory.clock import ManualClock
from tests.clients import TEST_TOKEN, app_client
from tests.daemon import RUN_MARK, Daemon, start_daemon, stop_leftovers

FIXTURES = Path(__file__).parent / "fixtures"
START = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)
STRESS = ("tests/stress/", "tests/history/test_crash.py")
"""Whole folders and modules of stress tests; single ones elsewhere carry the mark."""
STRESS_TIMEOUT_S = 900
"""A stress test's cap: only a hang reaches it (at load 17 on two cores, the slowest took
over five minutes); the check's others have pytest's 300 s."""


FIRST = (
    *STRESS,
    "tests/sync/",
    "tests/dsh/",
    "tests/ui/",
    "tests/e2e/",
    "tests/server/",
    "tests/store/test_modes.py",
    "tests/store/test_safe.py",
    "tests/store/test_fields.py",
    "tests/sessions/test_capture_daemon.py",
    "tests/api/observe/test_daemon_logs.py",
)
"""The folders and modules of the longest test files (most start real daemons): collected
first, so that on two workers (``scripts/dev check``) they start early instead of running
alone at the end."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix().startswith(STRESS):
            item.add_marker(pytest.mark.stress)
        if item.get_closest_marker("stress") is not None:
            item.add_marker(pytest.mark.timeout(STRESS_TIMEOUT_S))
    items.sort(key=lambda item: _rank(item.path.relative_to(root).as_posix()))


def _rank(path: str) -> int:
    return next((i for i, prefix in enumerate(FIRST) if path.startswith(prefix)), len(FIRST))


@pytest.fixture(scope="session", autouse=True)
def no_daemon_left_behind() -> Iterator[None]:
    """Every ``somnid serve`` a test starts inherits a mark of this run; whatever of them
    still runs at the end (a test that failed before its clean-up, an orphan) is killed,
    and said."""
    os.environ[RUN_MARK] = f"{os.getpid()}-{uuid.uuid4().hex}"
    yield
    killed = stop_leftovers(os.environ[RUN_MARK])
    if killed:
        print(
            f"\nkilled {len(killed)} somnid daemons tests left running: {killed}", file=sys.stderr
        )


@pytest.fixture(scope="session")
def e5_int8_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default model (int8 multilingual-e5-small), converted once per test session."""
    return install_default_model(tmp_path_factory.mktemp("models-int8"), quantize=True)


@pytest.fixture(scope="session")
def int8_embedder(e5_int8_dir: Path) -> Iterator[OnnxEmbedder]:
    embedder = OnnxEmbedder.load(e5_int8_dir, threads=2)
    yield embedder
    embedder.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, timezone="UTC", embed={"provider": "off"}, token=TEST_TOKEN)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def client(settings: Settings, clock: ManualClock) -> Iterator[TestClient]:
    with app_client(create_app(settings, clock=clock), settings) as test_client:
        yield test_client


@pytest.fixture
def expiring(settings: Settings, clock: ManualClock) -> Iterator[TestClient]:
    """An app whose upkeep expires an intention a day after it is due."""
    memory = settings.memory.model_copy(update={"intention_expiry_days": 1})
    expiry = settings.model_copy(update={"memory": memory})
    with app_client(create_app(expiry, clock=clock), expiry) as test_client:
        yield test_client


@pytest.fixture
def original_data_dir(data_dir: Path) -> Path:
    """A copy of a data dir written by the original plugin, quirks and all."""
    shutil.copytree(FIXTURES / "original-datadir", data_dir)
    return data_dir


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with start_daemon(tmp_path / "daemon-data") as running:
        yield running
