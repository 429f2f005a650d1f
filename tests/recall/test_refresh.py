"""Index figures refreshed off the caller's path (recall/refresh.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from somnid.errors import IndexUnavailable
from somnid.recall.refresh import Refreshed

WAIT_S = 30.0


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.005)


class Server:
    """A figure that can be held back (the read waits on ``gate``) or made to fail."""

    def __init__(self) -> None:
        self.value = 1
        self.reads = 0
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()
        self.fail = False

    def read(self) -> int:
        self.reads += 1
        self.waiting.set()
        assert self.gate.wait(WAIT_S)
        if self.fail:
            raise IndexUnavailable("the server is away")
        return self.value


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    executor = ThreadPoolExecutor(1)
    yield executor
    executor.shutdown(wait=True, cancel_futures=True)


def make(server: Server, pool: ThreadPoolExecutor) -> tuple[Refreshed[int], list[float]]:
    now = [0.0]
    return Refreshed(server.read, 10.0, pool, clock=lambda: now[0]), now


def test_the_first_read_waits_and_a_fresh_figure_is_not_read_again(
    pool: ThreadPoolExecutor,
) -> None:
    server = Server()
    figure, now = make(server, pool)
    assert figure.get() == 1
    server.value = 2
    now[0] = 9.0
    assert figure.get() == 1
    assert server.reads == 1


def test_a_stale_figure_answers_at_once_while_the_next_is_read(pool: ThreadPoolExecutor) -> None:
    server = Server()
    figure, now = make(server, pool)
    figure.get()
    server.value, now[0] = 2, 11.0
    server.gate.clear()
    server.waiting.clear()
    assert figure.get() == 1  # the read is held back: the caller did not wait for it
    assert server.waiting.wait(WAIT_S)
    assert figure.get() == 1  # one read at a time
    assert server.reads == 2
    server.gate.set()
    wait_for(lambda: figure.get() == 2)
    assert server.reads == 2


def test_forget_waits_for_a_new_read_and_drops_one_begun_before(pool: ThreadPoolExecutor) -> None:
    server = Server()
    figure, now = make(server, pool)
    figure.get()
    now[0] = 11.0
    server.gate.clear()
    server.waiting.clear()
    figure.get()  # a refresh starts, held back
    assert server.waiting.wait(WAIT_S)
    figure.forget()  # a write: what that refresh reads may be from before it
    server.value = 3
    server.gate.set()
    assert figure.get() == 3
    pool.submit(lambda: None).result(WAIT_S)  # the held refresh has finished
    assert figure.get() == 3


def test_a_failed_refresh_keeps_the_figure_and_is_tried_again(pool: ThreadPoolExecutor) -> None:
    server = Server()
    figure, now = make(server, pool)
    figure.get()
    server.fail, now[0] = True, 11.0
    assert figure.get() == 1
    wait_for(lambda: server.reads == 2)
    pool.submit(lambda: None).result(WAIT_S)
    assert figure.get() == 1  # kept, and a new refresh is under way
    wait_for(lambda: server.reads == 3)
    server.fail = False
    server.value = 7
    wait_for(lambda: figure.get() == 7)


def test_a_stopped_pool_leaves_the_figure_as_it_was(pool: ThreadPoolExecutor) -> None:
    server = Server()
    figure, now = make(server, pool)
    figure.get()
    pool.shutdown(wait=True)
    now[0] = 11.0
    assert figure.get() == 1
    assert server.reads == 1
