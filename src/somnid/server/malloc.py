"""Large freed blocks go back to the system at once (glibc).

glibc raises its mmap threshold each time a large mmapped block is freed, so later tensors
of the same size come from the heap arenas instead, one arena per thread that allocates;
freed there they stay with the process. Embedding a store from pool threads grew the daemon
by ~250 MB this way. A fixed threshold keeps every block over it in its own mapping,
returned when freed: embedding 3,000 texts peaked at 586 MB against 788-837 MB.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import platform

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
THRESHOLD = 128 * 1024  # glibc's own starting value, no longer raised


def return_large_blocks(threshold: int = THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; False where it does not apply
    (another C library) or was refused."""
    if platform.libc_ver()[0] != "glibc":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(M_MMAP_THRESHOLD, threshold))
    if not done:
        log.debug("mallopt(M_MMAP_THRESHOLD, %d) was refused", threshold)
    return done
