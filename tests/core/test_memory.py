"""briefkit.core.memory: freed heap pages go back to the system (glibc, which Debian has)."""
from __future__ import annotations

import platform
import subprocess
import sys

import pytest

# In a child process: many 2 MB arrays (heap blocks, once glibc's threshold has risen), every other one
# freed, which leaves holes malloc keeps; the resident size before and after ``release``.
CHILD = r"""
import re, numpy as np
from briefkit.core import memory
def rss():
    return int(re.search(r"^VmRSS:\s+(\d+)", open("/proc/self/status").read(), re.M).group(1)) * 1024
warm = np.ones(2 << 20, dtype=np.uint8); del warm     # a freed mmap block raises glibc's threshold
blocks = [np.ones(2 << 20, dtype=np.uint8) for _ in range(100)]
del blocks[::2]
before = rss(); memory.release(); print(before - rss())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_release_gives_freed_heap_back():
    freed = int(subprocess.run([sys.executable, "-c", CHILD], check=True, capture_output=True, text=True).stdout)
    assert freed > 50 * (2 << 20) // 2   # most of the 50 freed blocks (100 MB)
