"""Giving freed memory back to the system while a large input is read.

glibc's malloc raises its mmap threshold each time a large block is freed, so the chunk arrays a
parser makes and drops (a few MB each) come from the heap afterwards; freed, they stay in the process
as free heap, and a log read chunk by chunk holds about twice its table before it is done. ``release``
asks glibc to hand the free pages back (``malloc_trim``: a few milliseconds). Elsewhere (another C
library) it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):   # not glibc
        return None


def release() -> None:
    """Return the free pages of the heap to the system (glibc); a no-op where that is not possible."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
