"""Freed heap memory goes back to the system when asked (glibc; elsewhere nothing to do)."""

from __future__ import annotations

import os
import platform

import pytest

from somnid.embed.heap import release_free_memory

BLOCK = 64 * 1024  # below glibc's mmap threshold: these come from the heap, not from mmap
BLOCKS = 2000  # 128 MB


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_freed_heap_pages_leave_the_process() -> None:
    blocks = [bytearray(BLOCK) for _ in range(BLOCKS)]  # zeroed: every page is touched
    pin = bytearray(BLOCK)  # above them, so the heap's top cannot shrink on its own
    del blocks
    held = _rss_mb()
    assert release_free_memory()
    assert held - _rss_mb() > 0.5 * BLOCK * BLOCKS / 2**20
    del pin
