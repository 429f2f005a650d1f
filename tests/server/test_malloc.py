"""Large freed blocks are given back to the system, not kept in malloc's heap."""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import subprocess
import sys

import pytest

from somnid.server import malloc

# Free a 4 MB block: glibc then raises its mmap threshold to 4 MB, and a 1 MB block comes
# from the heap (where, freed, it stays with the process) unless the threshold is fixed.
# mallinfo2's hblks counts the blocks held in their own mappings.
PROBE = """
import ctypes, ctypes.util, sys
from somnid.server.malloc import return_large_blocks
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.mallinfo2.restype = Info
if sys.argv[1] == "fixed":
    assert return_large_blocks()
big = b"x" * (4 << 20)
del big
before = libc.mallinfo2().hblks
block = b"x" * (1 << 20)
print(libc.mallinfo2().hblks - before)
"""


def _own_mappings(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return int(done.stdout.strip())


def _has_mallinfo2() -> bool:
    name = ctypes.util.find_library("c")
    return name is not None and hasattr(ctypes.CDLL(name), "mallinfo2")


@pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc" or not _has_mallinfo2(), reason="glibc ≥ 2.33 only"
)
def test_a_large_block_gets_its_own_mapping_after_a_larger_was_freed() -> None:
    assert _own_mappings("default") == 0  # glibc alone: from the heap, kept when freed
    assert _own_mappings("fixed") == 1


def test_no_glibc_no_change(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert malloc.return_large_blocks() is False
