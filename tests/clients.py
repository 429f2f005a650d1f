"""TestClients that pass the door: a loopback Host and the daemon's bearer token."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from fastapi import FastAPI
from fastapi.testclient import TestClient

from somnid.config import Settings
from somnid.security import read_token_file, token_path

TEST_TOKEN = "test-token"
BASE_URL = "http://127.0.0.1"


def token_of(settings: Settings) -> str:
    """The token the app expects: the configured one, else the one it generated."""
    if settings.token is not None:
        return settings.token.get_secret_value()
    token = read_token_file(token_path(settings.data_dir))
    assert token is not None, "the app has not started (no token file yet)"
    return token


@contextlib.contextmanager
def app_client(app: FastAPI, settings: Settings) -> Iterator[TestClient]:
    """Run ``app`` with its lifespan and a client that sends the token."""
    with TestClient(app, base_url=BASE_URL) as client:
        client.headers["Authorization"] = f"Bearer {token_of(settings)}"
        yield client
