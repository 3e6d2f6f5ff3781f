"""The briefs' look: seaborn's theme, applied without importing seaborn.

seaborn's ``set_theme`` only sets matplotlib's global state, but importing seaborn imports scipy.stats,
scipy.cluster and scipy.spatial: 0.6 s of every notebook kernel's start, for a theme. So the state it
leaves is written once to ``theme.json`` (``python -m briefkit.briefs.shared.theme > ...``, ``make
theme``) and applied here with matplotlib's own style machinery: every rcParam ``set_theme`` sets, the
colormap its style names (``image.cmap``, registered by seaborn's import) and the one-letter colour
codes it remaps. seaborn stays the source of truth: a test keeps the committed file equal to what
``set_theme(**SET_THEME)`` gives with the installed seaborn.
"""
from __future__ import annotations

import enum
import json
import sys
from pathlib import Path

#: The one call the briefs' look comes from.
SET_THEME = {"style": "whitegrid", "context": "notebook", "font_scale": 0.9}
#: The generated state, read by ``apply``.
THEME = Path(__file__).with_name("theme.json")


def apply() -> None:
    """Leave matplotlib in the state ``seaborn.set_theme(**SET_THEME)`` leaves it in."""
    import matplotlib as mpl
    import matplotlib.style

    theme = json.loads(THEME.read_text())
    for name, colours in theme["colormaps"].items():
        if name not in mpl.colormaps:   # seaborn, when imported too, registers its own only where absent
            mpl.colormaps.register(mpl.colors.ListedColormap(colours, name))
    matplotlib.style.use(theme["rc"])
    for code, rgb in theme["color_codes"].items():
        mpl.colors.colorConverter.colors[code] = tuple(rgb)


def state() -> dict:
    """matplotlib's state that the theme is made of, as ``theme.json`` holds it (its ``rc`` section:
    every key seaborn sets, and any other it changes)."""
    import matplotlib as mpl
    import seaborn as sns

    keys = set(sns.plotting_context(SET_THEME["context"], SET_THEME["font_scale"])) | set(
        sns.axes_style(SET_THEME["style"])) | {"font.family", "axes.prop_cycle"}
    with mpl.rc_context():
        mpl.rcdefaults()
        defaults = dict(mpl.rcParams)
        codes = {code: mpl.colors.colorConverter.to_rgb(code) for code in "bgrmyck"}
        sns.set_theme(**SET_THEME)
        rc = {key: _text(value) for key, value in sorted(mpl.rcParams.items())
              if key in keys or value != defaults[key]}
        color_codes = {code: list(mpl.colors.colorConverter.to_rgb(code)) for code in codes}
        # seaborn's own colormap objects (its module's), not the registry's, which may hold ours
        cmaps = {name: [list(c) for c in getattr(sns.cm, name).colors] for name in [mpl.rcParams["image.cmap"]]
                 if hasattr(sns.cm, name)}
    # set_theme's colour codes are part of its state; mpl.rc_context restores rcParams only
    for code, rgb in codes.items():
        mpl.colors.colorConverter.colors[code] = rgb
    return {"generated_by": "make theme", "seaborn": sns.__version__, "set_theme": SET_THEME,
            "rc": rc, "colormaps": cmaps, "color_codes": color_codes}


def _text(value):
    """An rcParam's value as JSON holds it: what its validator reads back (a cycler as its repr)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return repr(value)


def dumps(theme: dict) -> str:
    """``theme`` as JSON with one rcParam, one colour per line (a diff shows what seaborn changed)."""
    def block(items, indent):
        return "{\n" + ",\n".join(f"{indent} {json.dumps(k)}: {v}" for k, v in items) + f"\n{indent}}}"
    parts = []
    for key, value in theme.items():
        if key == "rc" or key == "color_codes":
            value = block(((k, json.dumps(v)) for k, v in value.items()), "")
        elif key == "colormaps":
            value = block(((name, "[\n" + ",\n".join(f"  {json.dumps(c)}" for c in colours) + "\n ]")
                           for name, colours in value.items()), "")
        else:
            value = json.dumps(value)
        parts.append(f"{json.dumps(key)}: {value}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


if __name__ == "__main__":
    sys.stdout.write(dumps(state()))
