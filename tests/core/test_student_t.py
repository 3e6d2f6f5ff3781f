"""Student's t of briefkit.core.stats: scipy.stats.t's values, without importing scipy.stats."""
from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
from scipy import stats as scipy_stats

from briefkit.core import stats

DFS = [0, -1, 0.3, 1, 1.5, 2, 3, 4, 7.25, 29, 100, 1e6, math.inf, math.nan]


def same(a, b) -> bool:
    return (a == b and type(a) is type(b)) or (np.isnan(a) and np.isnan(b))


def test_quantiles_and_tails_are_scipy_stats_t_bit_for_bit():
    t = stats.student_t()
    for q, df in itertools.product([1e-9, 0.025, 0.5, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995, 1 - 1e-12], DFS):
        assert same(t.ppf(q, df), scipy_stats.t.ppf(q, df)), (q, df)
    for x, df in itertools.product([-math.inf, -5, -1e-9, 0, 0.3, 2, 50, math.inf, math.nan], DFS):
        assert same(t.sf(x, df), scipy_stats.t.sf(x, df)), (x, df)


def test_an_interval_does_not_import_scipy_stats():
    """In a fresh interpreter, as in a brief's notebook kernel: scipy.stats is 0.5 CPU-s more to import."""
    check = ("import json, sys\nfrom briefkit.core import stats\n"
             "print(json.dumps([stats.confidence_interval([1.0, 2.0, 4.0]), stats.welch([1.0, 2.0, 4.0], [3.0, 5.0]).p,"
             " 'scipy.stats' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (mean, low, high, n), p, imported = json.loads(done.stdout)
    assert (mean, n) == (7 / 3, 3) and low < mean < high and 0 < p < 1
    assert imported is False
