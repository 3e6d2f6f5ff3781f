"""dvc.yaml lists, for each stage, every source file the stage's command really runs.

The closure is computed from the code, not typed in: the command line's module-level imports, the
imports of `main`, `parser` and of the command's own function (and the cli functions it calls), the
imports of the notebook's code cells (notebook stage), and the modules the tool registry names as
strings; then every module those import, transitively (grimp, as import-linter uses). A module that
no dep of the stage covers is a stage that would not re-run when that module changes.

cli.py itself is left out of every stage: it parses arguments and dispatches; listing it would re-run
all stages of every brief on a help-text edit. The measure stage is left out by design: it depends on
its campaign's declaration only, so that an edit of the code never re-runs a campaign (dvc.yaml).
"""
from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path

import grimp
import pytest
import yaml

from briefkit import tools
from tests import paths

ROOT = paths.ROOT
SRC = ROOT / "src"
CLI = SRC / "briefkit" / "cli.py"
STAGES = ("tidy", "dataset", "notebook", "render")


@cache
def graph() -> grimp.ImportGraph:
    # imports under `if TYPE_CHECKING:` never run
    return grimp.build_graph("briefkit", include_external_packages=False, exclude_type_checking_imports=True)


def _module_of(node: ast.ImportFrom | ast.Import) -> set[str]:
    """The briefkit modules an import statement names (``from pkg import module`` names the module)."""
    names = set()
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
    elif node.module and node.level == 0:
        for alias in node.names:
            child = f"{node.module}.{alias.name}"
            names.add(child if child in graph().modules else node.module)
    return {name for name in names if name.split(".")[0] == "briefkit"}


def _imports(nodes) -> set[str]:
    found = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                found |= _module_of(sub)
    return found


def cli_entries(command: str) -> set[str]:
    """The modules `briefkit COMMAND` imports: the cli's top level, main, parser, and the command's
    function with every cli function it calls."""
    tree = ast.parse(CLI.read_text())
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    from briefkit import cli

    handler = cli.parser().parse_args([command, "x"]).func.__name__
    todo, seen = ["main", "parser", handler], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for sub in ast.walk(functions[name]):
            # calls only: `parser` names every command's function, as a value, without running it
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in functions:
                todo.append(sub.func.id)
    return _imports(top) | _imports(functions[name] for name in seen)


def notebook_entries() -> set[str]:
    """The modules the brief notebooks import in their code cells (every notebook a brief names)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    found = set()
    for name in {brief["notebook"] for brief in params["briefs"].values()}:
        cells = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]
        code = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
        # IPython magics are not Python; no brief notebook uses them, and a new one would fail here
        found |= _imports([ast.parse(code)])
    return found


def registered() -> set[str]:
    """Modules the tool registry imports by name at run time (grimp cannot see string imports)."""
    names = {f"briefkit.tools.{package}" for package in tools.TOOL_PACKAGES}
    for tool in tools.TOOLS.values():
        names.add(tool.parser)
        if tool.workload:
            names.add(tool.workload.split(":")[0])
    return names


def closure(entries: set[str]) -> set[str]:
    modules = set(entries)
    for name in list(modules):
        modules |= graph().find_upstream_modules(name)
    # the registry's string imports run where a module of the stage uses the registry (the cli's
    # `ingest` choices only read its names)
    if graph().find_modules_that_directly_import("briefkit.tools") & modules:
        for name in registered():
            modules |= {name} | graph().find_upstream_modules(name)
    return modules - {"briefkit", "briefkit.cli"}


def stage_closure(stage: str) -> set[str]:
    entries = cli_entries({"tidy": "dataset", "dataset": "dataset", "notebook": "execute", "render": "render"}[stage])
    if stage == "notebook":
        entries |= notebook_entries()
    return closure(entries)


def module_file(name: str) -> Path:
    path = SRC / Path(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def stage_deps(stage: str) -> list[str]:
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    return [dep for dep in dvc["stages"][stage]["do"]["deps"] if dep.startswith("src/")]


def uncovered(modules: set[str], deps: list[str]) -> list[str]:
    """The modules whose file no dep (a file or a folder above it) covers."""
    covered = [ROOT / dep for dep in deps]
    return sorted(name for name in modules
                  if not any(module_file(name) == dep or dep in module_file(name).parents for dep in covered))


@pytest.mark.parametrize("stage", STAGES)
def test_every_module_a_stage_runs_is_a_dependency_of_the_stage(stage):
    missing = uncovered(stage_closure(stage), stage_deps(stage))
    assert not missing, f"dvc.yaml stage {stage!r} runs these modules but does not list them: {missing}"


@pytest.mark.parametrize("stage", STAGES)
def test_every_listed_source_is_needed(stage):
    """Each src/ dep is needed: without it, some module the stage runs is not covered. So the check
    fails when a dependency is removed, and a dep listed for nothing is caught too."""
    modules, deps = stage_closure(stage), stage_deps(stage)
    for dep in deps:
        assert (ROOT / dep).exists(), f"dvc.yaml stage {stage!r} lists {dep}, which does not exist"
        if (ROOT / dep).is_dir() and not any((ROOT / dep).rglob("*.py")):
            continue  # data the code reads (templates), not modules: not an import
        rest = [other for other in deps if other != dep]
        assert uncovered(modules, rest), f"dvc.yaml stage {stage!r}: {dep} covers nothing the stage runs"


def test_the_closure_follows_imports_inside_functions_and_notebooks():
    """The walk is not vacuous: the render stage reaches the renderer, the notebook stage reaches the
    brief classes through the notebooks' cells, and the dataset stage reaches every tool's parser
    through the registry's strings."""
    assert "briefkit.report.render" in stage_closure("render")
    assert "briefkit.briefs.fio_mix.notebook" in stage_closure("notebook")
    assert registered() <= stage_closure("dataset")
    assert not any(name.split(".")[1] in ("hosts", "storage", "power", "inventory") for name in stage_closure("render"))


# ------------------------------------------------------------------------------ no import cycle


def static_import_graph(package: Path = SRC / "briefkit") -> dict[str, set[str]]:
    """Every briefkit module and the briefkit modules it names in an import statement anywhere in its
    file: at the top, inside functions and under ``if TYPE_CHECKING:`` alike (a deferred or type-only
    import hides a cycle from the interpreter, not from a reader). Read with ast, nothing is imported."""
    root = package.parent
    files = {".".join(path.relative_to(root).with_suffix("").parts[:-1] if path.name == "__init__.py"
                      else path.relative_to(root).with_suffix("").parts): path
             for path in package.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in files:   # `import a.b.c` of a name inside a.b: the module a.b
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for module, path in files.items():
        here = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {known(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                    base = f"{parent}.{base}" if base else parent
                # `from pkg import module` names the module, `from module import name` the module
                found |= {known(f"{base}.{alias.name}") if f"{base}.{alias.name}" in files else known(base)
                          for alias in node.names}
        edges[module] = {name for name in found if name and name != module}
    return edges


def import_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as the modules along it (first module repeated at the end), or None."""
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for other in sorted(edges.get(module, ())):
            if state.get(other) == 1:
                return path[path.index(other):] + [other]
            if other not in state and (cycle := visit(other)):
                return cycle
        state[module] = 2
        path.pop()
        return None

    for module in sorted(edges):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_no_import_cycle_in_src():
    """No briefkit module imports, directly or through others, a module that imports it back: each layer
    and each module builds on the ones below it only. Shared pieces go to the lower module (or a Protocol
    names what a module needs of another), never into an import moved inside a function."""
    cycle = import_cycle(static_import_graph())
    assert cycle is None, "import cycle in src/briefkit: " + " -> ".join(cycle)


def test_the_cycle_check_sees_deferred_and_type_only_imports(tmp_path):
    """The check can fail: a cycle closed only by an import inside a function, or only under
    TYPE_CHECKING, or through a relative import, is found and named."""
    for n, closing in enumerate(("def f():\n    from pkg import a\n",
                    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import X\n",
                    "from . import a\n")):
        pkg = tmp_path / str(n) / "pkg"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "a.py").write_text("from pkg.b import Y\n")
        (pkg / "b.py").write_text(closing)
        assert import_cycle(static_import_graph(pkg)) == ["pkg.a", "pkg.b", "pkg.a"], closing
    assert import_cycle({"x": {"y"}, "y": set()}) is None
