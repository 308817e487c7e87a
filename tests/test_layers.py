"""The house rules a newcomer relies on: packages import downward only, and only `Store` knows the layout.

Beside `test_dagster.py::test_core_library_never_imports_dagster`. Every import counts, including the ones
inside functions (a lazy import is still a dependency); only `if TYPE_CHECKING:` blocks are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("harnessforge", "harnessforge_assets", "resources", "sensors")

# Lowest first, one layer per line: "name: units". A unit may import its own modules and any unit of a lower
# layer; units of one layer are peers and import neither each other nor anything above.
LAYER_TABLE = """
version: harnessforge
models: harnessforge.models
errors: harnessforge.errors
atomic files: harnessforge.atomic
rules and store: harnessforge.rules harnessforge.store
git and GitHub: harnessforge.gitio harnessforge.github
files and text: harnessforge.files harnessforge.diffs harnessforge.syntax harnessforge.text_lint harnessforge.refs
repositories: harnessforge.repos
environments: harnessforge.envs
mining: harnessforge.mining
agents: harnessforge.agents
harness: harnessforge.harness
analytics: harnessforge.analytics
distill: harnessforge.distill
export and report: harnessforge.export harnessforge.report
example repositories: harnessforge.examples
checks and demo: harnessforge.checks harnessforge.demo
command line: harnessforge.cli
dagster resources: resources
dagster assets: harnessforge_assets
dagster sensors: sensors
dagster definitions: harnessforge_assets.definitions
"""
LAYERS = [(name, set(units.split())) for name, units in (line.split(": ") for line in LAYER_TABLE.strip().splitlines())]
LAYER_OF = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}


def unit_of(module: str) -> str | None:
    """The longest unit of `LAYERS` that `module` belongs to (None: not ours)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYER_OF:
            return ".".join(parts[:n])
    return None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(path: Path) -> set[str]:
    """The modules `path` imports (absolute names), every import in the file."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            # `from . import x` / `from .pkg import mod` name modules too
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def our_modules() -> dict[str, Path]:
    return {module_name(p): p for source in SOURCES for p in sorted((ROOT / source).rglob("*.py"))}


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """Each import of a higher layer or of a peer unit, as `a -> b (layer a, layer b)`."""
    bad = []
    for source, targets in sorted(edges.items()):
        here = unit_of(source)
        for target in sorted(targets):
            there = unit_of(target)
            if here is None or there is None or here == there:
                continue
            if LAYER_OF[there] >= LAYER_OF[here] and not here.startswith(there + "."):
                names = LAYERS[LAYER_OF[here]][0], LAYERS[LAYER_OF[there]][0]
                bad.append(f"{source} -> {target} ({names[0]} may not import {names[1]})")
    return bad


def module_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles between our modules (each reported once, from its smallest module)."""
    cycles, seen = [], set()
    for start in sorted(edges):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    key = frozenset(path)
                    if key not in seen and min(path) == start:
                        seen.add(key)
                        cycles.append(path)
                elif nxt not in path and nxt > start:
                    stack.append((nxt, [*path, nxt]))
    return cycles


def import_graph() -> dict[str, set[str]]:
    modules = our_modules()
    graph = {}
    for name, path in modules.items():
        # `from ..mining import classify` names the module harnessforge.mining.classify when it is one
        graph[name] = {m for m in imports_of(path) if m in modules and m != name}
    return graph


def test_every_module_has_a_layer():
    assert [m for m in our_modules() if unit_of(m) is None] == []


def test_packages_import_downward_only():
    assert layer_violations(import_graph()) == []


def test_no_module_import_cycles():
    # a package's __init__ importing its own modules is not a cycle worth naming; anything else is
    graph = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in import_graph().items()}
    assert module_cycles(graph) == []


def test_the_check_fails_on_the_cycle_the_layers_replaced():
    """Before this layering, envs.recipes used mining.screening, which used envs.environment."""
    old = {
        "harnessforge.envs.recipes": {"harnessforge.mining.screening"},
        "harnessforge.mining.screening": {"harnessforge.envs.environment"},
        "harnessforge.distill.verify": {"harnessforge.export.harbor"},
        "harnessforge.export": {"harnessforge.distill"},
    }
    assert layer_violations(old) == [
        "harnessforge.distill.verify -> harnessforge.export.harbor (distill may not import export and report)",
        "harnessforge.envs.recipes -> harnessforge.mining.screening (environments may not import mining)",
    ]
    assert module_cycles({**old, "harnessforge.envs.environment": {"harnessforge.envs.recipes"}}) == [
        ["harnessforge.envs.environment", "harnessforge.envs.recipes", "harnessforge.mining.screening"]
    ]
    assert layer_violations({"harnessforge.mining.pm": {"harnessforge.agents.base"}}) != []  # upward
    assert layer_violations({"harnessforge.export": {"harnessforge.report.viewer"}}) != []  # peers


# ---- the store's layout ----------------------------------------------------------------------------
LAYOUT_NAMES = {  # folder and file names of the store's layout (harnessforge/store.py)
    "repos",
    "images",
    "trajectories",
    "analytics",
    "distilled",
    "datasets",
    "report",
    "example",
    "cache",
    "milestones",
    "summary.json",
    "trajectory.jsonl",
    "trajectory.atif.json",
    "metadata.json",
    "mentor_log.json",
    "test_results.json",
    "final_diff.patch",
    "ground_truth.patch",
    "start.patch",
    "manifest.json",
    "task_checks.json",
    "reviews.jsonl",
    "harnessforge.duckdb",
    "plan.json",
    "milestone.json",
    "validation.json",
}


def _is_store(node: ast.AST) -> bool:
    """`store`, `s`, `state.store`, `forge_store`...: the names a Store goes by (not a sandbox's own `self.root`)."""
    text = ast.unparse(node)
    return text in ("s", "store") or text.endswith((".store", "_store", "store()"))


def _layout_joins(tree: ast.AST) -> list[str]:
    """Path joins (`a / b`) and globs that spell the layout: a store's `.root`, or one of its names."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Attribute) and side.attr == "root" and _is_store(side.value):
                    found.append(ast.unparse(node))
                elif isinstance(side, ast.Constant) and side.value in LAYOUT_NAMES:
                    found.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("glob", "rglob"):
            pattern = node.args[0] if node.args else None
            text = ast.unparse(pattern) if pattern is not None else ""
            if any(name in text for name in LAYOUT_NAMES):
                found.append(ast.unparse(node))
    return found


def test_only_the_store_builds_store_paths():
    offenders = {}
    for name, path in our_modules().items():
        if name == "harnessforge.store" or name.startswith("harnessforge.examples"):
            continue  # examples build git repositories, not store paths
        joins = _layout_joins(ast.parse(path.read_text()))
        if joins:
            offenders[name] = joins
    assert offenders == {}


def test_the_layout_check_sees_a_join_under_the_root():
    code = 'p = store.root / "trajectories" / key\nq = run_dir / "summary.json"\nr = d.glob("*/*/metadata.json")'
    assert len(_layout_joins(ast.parse(code))) == 4  # the two joins of p (nested), q, and the glob


def test_benchmarks_build_no_store_paths_either():
    """The benchmarks drive the core over stores of their own; they ask `Store` too (their results folder,
    `RESULTS`, is not a store)."""
    offenders = {}
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        joins = [j for j in _layout_joins(ast.parse(path.read_text())) if not j.startswith("RESULTS /")]
        if joins:
            offenders[path.name] = joins
    assert offenders == {}
