"""Repetitions of a measurement: mean with a Student-t confidence interval, and medians.

Both work on a tidy sample table (``briefkit.core.samples``) and group by everything that names a
measurement point (brief, config, workload, load_kind, load, metric, unit and the point parameter
columns ``p_<name>``), pooling the repetitions (``rep``) and ignoring provenance (host, tool,
tool_version, campaign, started_at, ended_at, source).

Latency percentiles (``..._p99``, ``..._p99.9``) must not be averaged over repetitions: the
mean of p99s is not the p99 of the runs. Merge the histograms and read the percentile from the
merged bins instead (``briefkit.tools.fio.jsonplus.merged_samples`` for fio json+). ``summarize`` and
``median`` therefore refuse percentile metrics unless told what to do with them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from briefkit.core import metrics, samples

#: Columns that identify a measurement point; the rest is the value, the repetition or provenance.
POINT_COLUMNS = ["brief", "config", "workload", "load_kind", "load", "metric", "unit"]

Percentiles = Literal["raise", "drop", "average"]


class _StudentT:
    """The two functions of Student's t distribution used here, as scipy.stats.t computes them (its
    ``_ppf`` and ``_sf`` are these scipy.special functions; tests/core/test_student_t.py checks equality):
    importing scipy.stats costs 0.5 CPU-s more than scipy.special (a brief's kernel paid it for its first
    interval), and each of its calls 0.1 ms of argument handling."""

    @staticmethod
    def ppf(q, df):
        """The quantile, for 0 < q < 1 (an interval's: scipy.stats.t says -inf at 0, stdtrit +inf)."""
        from scipy import special

        return special.stdtrit(df, q)

    @staticmethod
    def sf(x, df):
        from scipy import special

        return special.stdtr(df, -x)


def student_t() -> type[_StudentT]:
    """Student's t distribution (``ppf``, ``sf``). Loaded at the first interval: a campaign's executor
    imports this module (adaptive repetitions) without always computing one."""
    return _StudentT


#: which ratio of the two means a difference states, and how its interval is said
RatioOf = Literal["a/b", "b/a"]
RatioStyle = Literal["percent", "multiple"]


def is_percentile(metric: str) -> bool:
    """``read_clat_p99.9`` -> True; ``read_clat_mean`` -> False."""
    return metrics.is_percentile(metric)


def _points(table: pd.DataFrame, percentiles: Percentiles) -> pd.DataFrame:
    missing = [c for c in [*POINT_COLUMNS, "value"] if c not in table.columns]
    if missing:
        raise KeyError(f"the sample table has no column(s) {', '.join(missing)}")
    flagged = table["metric"].map(is_percentile)
    if flagged.any():
        if percentiles == "raise":
            names = ", ".join(sorted(table.loc[flagged, "metric"].unique())[:5])
            raise ValueError(f"percentile metrics ({names}) cannot be averaged over repetitions: "
                             "merge their histograms (briefkit.tools.fio.jsonplus.merged_samples), pass "
                             "percentiles='drop' to leave them out, or 'average' to do it anyway")
        if percentiles == "drop":
            table = table.loc[~flagged]
        elif percentiles != "average":
            raise ValueError("percentiles must be 'raise', 'drop' or 'average', "
                             f"not {percentiles!r}")
    return table


def confidence_interval(values, confidence: float = 0.95) -> tuple[float, float, float, int]:
    """(mean, ci_low, ci_high, n) of a sample, Student t with n - 1 degrees of freedom.

    With one value the interval is undefined (NaN, NaN); NaN values are ignored."""
    import numpy as np  # here: every `briefkit measure` imports this module, most compute nothing

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    data = np.asarray(values, dtype=float)
    data = data[~np.isnan(data)]
    n = int(data.size)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(data.mean())
    if n == 1:
        return mean, math.nan, math.nan, 1
    t = student_t().ppf((1.0 + confidence) / 2.0, n - 1)
    half = float(t * data.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half, n


def summarize(table: pd.DataFrame, confidence: float = 0.95,
              percentiles: Percentiles = "raise") -> pd.DataFrame:
    """Mean over repetitions with a Student-t confidence interval, one row per point.

    Returns the point columns plus ``mean``, ``n``, ``std``, ``ci_low``, ``ci_high``
    (``ci_*`` NaN when n == 1). Percentile metrics: see the module docstring."""
    table = _points(table, percentiles)
    keys = [*POINT_COLUMNS, *samples.parameter_columns(table)]
    rows = []
    for key, group in table.groupby(keys, dropna=False, sort=False):
        values = group["value"].astype(float)
        mean, low, high, n = confidence_interval(values, confidence)
        std = float(values.std(ddof=1)) if n > 1 else math.nan
        rows.append({**dict(zip(keys, key)), "mean": mean, "n": n, "std": std,
                     "ci_low": low, "ci_high": high})
    found = pd.DataFrame(rows, columns=[*keys, "mean", "n", "std", "ci_low", "ci_high"])
    return samples.with_parameter_dtypes(found, [table], list(found.columns))


def median(table: pd.DataFrame, percentiles: Percentiles = "raise") -> pd.DataFrame:
    """Median over repetitions, one row per point: the point columns plus ``median`` and ``n``."""
    table = _points(table, percentiles)
    keys = [*POINT_COLUMNS, *samples.parameter_columns(table)]
    grouped = table.assign(value=table["value"].astype(float)).groupby(keys, dropna=False, sort=False)["value"]
    result = grouped.agg(median="median", n="count").reset_index()
    return result[[*keys, "median", "n"]]


# ------------------------------------------------------------------ differences between two points

#: Below this Welch p-value a difference between two groups of repetitions counts as significant.
ALPHA = 0.05


@dataclass(frozen=True)
class Difference:
    """Welch's t-test of two groups of repetitions: ``difference`` = mean(a) - mean(b), its
    confidence interval (``low``, ``high``), the two-sided ``p`` value and the size of each side.
    With fewer than two values on a side, or no run-to-run variation at all, nothing is tested:
    ``p``, ``low`` and ``high`` are NaN."""

    difference: float
    low: float
    high: float
    p: float
    n_a: int
    n_b: int
    confidence: float = 0.95
    #: the Fieller interval of the ratio of means in the orientation the brief states (``welch``'s
    #: ``ratio_of``), and whether to say it as a difference (``percent``: ratio - 1) or a ``multiple``
    ratio: RatioInterval | None = None
    style: RatioStyle = "percent"

    @property
    def tested(self) -> bool:
        return self.n_a >= 2 and self.n_b >= 2 and math.isfinite(self.p)

    @property
    def significant(self) -> bool:
        return self.tested and self.p < ALPHA

    @property
    def n_text(self) -> str:
        return f"n = {self.n_a} vs {self.n_b}"

    @property
    def why_untested(self) -> str:
        if self.n_a < 2 or self.n_b < 2:
            return f"not tested ({self.n_text})"
        return f"not tested (no run-to-run variation; {self.n_text})"

    @property
    def n_and_interval(self) -> str:
        """"n = 3 vs 3, 95 % CI +15 % to +28 %": the sizes, and the ratio's interval when there is one."""
        if self.ratio is None or not self.ratio.estimated:
            return self.n_text
        return f"{self.n_text}, {self.ratio.text(self.style)}"

    def p_text(self) -> str:
        """"Welch p = 0.003, n = 3 vs 3, 95 % CI +15 % to +28 %", or why the difference was not tested."""
        if not self.tested:
            return self.why_untested
        return f"Welch {p_value_text(self.p)}, {self.n_and_interval}"

    @property
    def short(self) -> str:
        """For a table cell: "Welch p = 0.003, n = 3 vs 3", "within noise: p = 0.41, n = 2 vs 2" or
        "not tested: n = 1 vs 1"."""
        if not self.tested:
            return self.why_untested.replace("not tested (", "not tested: ").removesuffix(")")
        if self.significant:
            return self.p_text()
        return f"within noise: {p_value_text(self.p)}, {self.n_and_interval}"

    def verdict(self) -> str:
        """"significant (Welch p = 0.003, n = 3 vs 3)", "no significant difference (p = 0.41, n = 2 vs 2)",
        or "not tested (n = 1 vs 2)"."""
        if not self.tested:
            return self.why_untested
        if self.significant:
            return f"significant ({self.p_text()})"
        return f"no significant difference ({p_value_text(self.p)}, {self.n_and_interval})"


def p_value_text(p: float) -> str:
    """"p = 0.41", "p = 0.0031" (two significant digits), "p < 0.001"."""
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.2g}" if p < 0.01 else f"p = {p:.2f}"


def fmt_number(value: float) -> str:
    """95.0 -> "95", 99.9 -> "99.9"."""
    return f"{value:.1f}".removesuffix(".0")


def signed_percent(fraction: float) -> str:
    """0.153 -> "+15 %", -0.02 -> "-2.0 %" (one decimal below 10 %)."""
    value = 100 * fraction
    digits = 1 if abs(value) < 10 else 0
    return f"{value:+.{digits}f} %"


def _finite(values):
    import numpy as np

    data = np.asarray(values, dtype=float)
    return data[np.isfinite(data)]


def welch(a, b, confidence: float = 0.95, *, ratio_of: RatioOf = "a/b", style: RatioStyle = "percent") -> Difference:
    """Welch's unequal-variances t-test of the repetitions ``a`` against ``b`` (NaN values ignored),
    with the Fieller interval of the ratio of means (see ``welch_from_stats``)."""
    a, b = _finite(a), _finite(b)
    if a.size == 0 or b.size == 0:
        raise ValueError(f"a difference needs values on both sides (n = {a.size} vs {b.size})")
    std = [float(x.std(ddof=1)) if x.size > 1 else math.nan for x in (a, b)]
    return welch_from_stats(float(a.mean()), std[0], int(a.size), float(b.mean()), std[1], int(b.size), confidence,
                            ratio_of=ratio_of, style=style)


def welch_from_stats(mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float, n_b: int,
                     confidence: float = 0.95, *, ratio_of: RatioOf = "a/b",
                     style: RatioStyle = "percent") -> Difference:
    """``welch`` from each side's mean, sample standard deviation (ddof 1) and n, as a summary
    table (``summarize``) holds them. Welch-Satterthwaite degrees of freedom.

    The difference a brief states is a ratio of the two means (``a/b - 1``, or ``b/a - 1`` when lower
    is better; a multiple ``a/b``): ``ratio_of`` says which, and the result carries that ratio's
    Fieller interval (``fieller``) at the same confidence, said as a difference or a multiple (``style``)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    if ratio_of not in ("a/b", "b/a"):
        raise ValueError(f"ratio_of must be 'a/b' or 'b/a', not {ratio_of!r}")
    n_a, n_b = int(n_a), int(n_b)
    difference = float(mean_a - mean_b)
    sides = [(mean_a, std_a, n_a), (mean_b, std_b, n_b)]
    numerator, denominator = sides if ratio_of == "a/b" else sides[::-1]
    ratio = fieller(*numerator, *denominator, confidence) if denominator[0] != 0 else None
    if n_a < 2 or n_b < 2 or not (math.isfinite(std_a) and math.isfinite(std_b)) or std_a == std_b == 0:
        return Difference(difference, math.nan, math.nan, math.nan, n_a, n_b, confidence, ratio, style)
    var_a, var_b = std_a ** 2 / n_a, std_b ** 2 / n_b
    se = math.sqrt(var_a + var_b)
    df = (var_a + var_b) ** 2 / (var_a ** 2 / (n_a - 1) + var_b ** 2 / (n_b - 1))
    p = float(2 * student_t().sf(abs(difference) / se, df))
    half = float(student_t().ppf((1 + confidence) / 2, df) * se)
    return Difference(difference, difference - half, difference + half, p, n_a, n_b, confidence, ratio, style)


def significant(a, b, alpha: float = ALPHA) -> bool:
    """Whether ``a`` and ``b`` differ beyond run-to-run noise: Welch p < ``alpha`` with at least two
    repetitions on each side. With one repetition on either side a difference is never significant."""
    result = welch(a, b)
    return result.tested and result.p < alpha


# ------------------------------------------------------------------ ratio of two means

# a ratio interval whose lower end reaches 0: the words every table and verdict use for it
UNBOUNDED_AT_ZERO = "interval reaches 0: unbounded"


@dataclass(frozen=True)
class RatioInterval:
    """The ratio ``mean_a / mean_b`` of two independent groups of repetitions and its Fieller interval
    (``low``, ``high``). ``bounded`` is False when the interval is not a finite range (``mean_b`` is not
    clearly away from zero at this confidence): then ``low`` and ``high`` are NaN. With fewer than two
    values on a side, or no run-to-run variation on either, nothing is estimated: NaN, and ``df`` NaN."""

    ratio: float
    low: float
    high: float
    df: float
    bounded: bool
    confidence: float = 0.95

    @property
    def estimated(self) -> bool:
        return math.isfinite(self.df)

    def text(self, style: RatioStyle = "percent") -> str:
        """"95 % CI +15 % to +28 %" (the ratio - 1, as a difference) or "95 % CI 2.8x to 3.4x" (a
        multiple); "95 % CI unbounded" when the interval is no finite range, "95 % CI interval reaches 0:
        unbounded" when it starts at or below 0; "" when not estimated."""
        if not self.estimated:
            return ""
        level = f"{fmt_number(100 * self.confidence)} % CI"
        if not self.bounded:
            return f"{level} unbounded"
        # The briefs' figures (throughput, latency, counts) are positive, and so is any ratio of their
        # means: a Fieller interval reaching 0 (a numerator mean not clearly above 0) bounds nothing on
        # that side. Said as the comparison's table says it (UNBOUNDED_AT_ZERO); low keeps its value.
        if self.low <= 0:
            return f"{level} {UNBOUNDED_AT_ZERO}"
        if style == "multiple":
            return f"{level} {self.low:.2f}x to {self.high:.2f}x"
        return f"{level} {signed_percent(self.low - 1)} to {signed_percent(self.high - 1)}"


def fieller(mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float, n_b: int,
            confidence: float = 0.95) -> RatioInterval:
    """Fieller's interval of the ratio of two independent means, unequal variances.

    The interval is every r for which (mean_a - r * mean_b) / sqrt(v_a + r^2 v_b) lies within +-t,
    with v = std^2 / n of each side and t Student's quantile at ``confidence``. Its degrees of freedom
    are Welch-Satterthwaite's for the variance of mean_a - r * mean_b, taken at the estimate
    r = mean_a / mean_b (Tamhane and Logan, 2004). Solving for r gives the quadratic

        (mean_b^2 - t^2 v_b) r^2 - 2 mean_a mean_b r + (mean_a^2 - t^2 v_a) <= 0,

    a finite interval when mean_b^2 > t^2 v_b (mean_b differs from 0 at this confidence)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    if mean_b == 0:
        raise ValueError("the ratio of means is undefined: the second mean is 0")
    n_a, n_b = int(n_a), int(n_b)
    ratio = float(mean_a / mean_b)
    if n_a < 2 or n_b < 2 or not (math.isfinite(std_a) and math.isfinite(std_b)) or std_a == std_b == 0:
        return RatioInterval(ratio, math.nan, math.nan, math.nan, False, confidence)
    var_a, var_b = std_a ** 2 / n_a, std_b ** 2 / n_b
    df = (var_a + ratio ** 2 * var_b) ** 2 / (var_a ** 2 / (n_a - 1) + ratio ** 4 * var_b ** 2 / (n_b - 1))
    t2 = float(student_t().ppf((1 + confidence) / 2, df)) ** 2
    quad = mean_b ** 2 - t2 * var_b
    if quad <= 0:
        return RatioInterval(ratio, math.nan, math.nan, df, False, confidence)
    half = math.sqrt((mean_a * mean_b) ** 2 - quad * (mean_a ** 2 - t2 * var_a))
    low, high = (mean_a * mean_b - half) / quad, (mean_a * mean_b + half) / quad
    return RatioInterval(ratio, low, high, df, True, confidence)
