"""Where the tests find the checkout and their fixtures, wherever below tests/ a test file lives."""
from __future__ import annotations

from pathlib import Path

#: the checkout's root (params.yaml, data/, notebooks/, src/)
ROOT = Path(__file__).resolve().parents[1]
#: tests/fixtures: recorded tool outputs, transcriptions and their generators
FIXTURES = ROOT / "tests" / "fixtures"
