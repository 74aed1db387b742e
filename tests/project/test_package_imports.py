"""The package's import graph has no cycle, and the stage folders are layered as the pipeline runs.

Imports inside functions count too: a lazy import hides a cycle from Python, not from a reader.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "specsweep"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from specsweep.x import y`` names x.y when y is a module)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolve against this module's package
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                imported |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
        graph[name] = {m for m in imported if m in modules and m != name}
    return graph


def cycle_from(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once fully explored
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_the_package_import_graph_has_no_cycle():
    graph = import_graph()
    assert (
        len(graph) > 30 and "specsweep.record.results" in graph["specsweep.analyse.drift"]
    )  # the walk sees the package
    cycle = cycle_from(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]), ({"a": {"b"}, "b": set()}, None)],
)
def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle(graph, expected):
    assert cycle_from(graph) == expected


# The pipeline's stages in order (docs/architecture.md): a stage imports only stages before it, never one
# after. The ground floor is below every stage and imports none: the maths (statistics that measure's adaptive
# stopping, the plan's detectable speedup and every analysis share) imports nothing of the package, the
# records only the maths; the shared vocabulary (the configuration, its error, the names) is a record, so
# engines and parsers, the plug-ins of plan and measure, import no stage. jobs, hooks and cli, the entry
# points, sit on top.
STAGES = ["plan", "measure", "analyse", "report", "archive"]
PLUG_INS = {"engines", "parsers"}
GROUND = ["maths", "record"]  # lowest first: each imports only the floors before it


def folder(module: str) -> str:
    """The stage folder a module is in ("" for the package's top-level modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        here = folder(module)
        for target in sorted(targets):
            there = folder(target)
            if there == here or target == "specsweep":
                continue
            if here in GROUND:
                allowed = there in GROUND[: GROUND.index(here)]
            elif there in GROUND:
                allowed = True
            elif here in PLUG_INS:
                allowed = there in PLUG_INS
            elif here in STAGES:
                allowed = there in PLUG_INS or (there in STAGES and STAGES.index(there) < STAGES.index(here))
            else:  # the entry points (jobs, cli) and the package itself
                allowed = True
            if not allowed:
                found.append(f"{module} -> {target}")
    return found


def test_each_module_lives_in_a_stage_folder():
    loose = sorted(m for m in import_graph() if folder(m) == "" and m != "specsweep")
    assert loose == ["specsweep.cli", "specsweep.hooks", "specsweep.jobs"]


def test_no_stage_imports_a_later_stage_and_the_records_import_no_stage():
    graph = import_graph()
    assert "specsweep.plan.config" in graph["specsweep.measure.session"]  # the walk sees the stage folders
    assert layering_violations(graph) == []


@pytest.mark.parametrize(
    ("edge", "wrong"),
    [
        (("specsweep.plan.design", "specsweep.analyse.aggregate"), True),  # back up the pipeline
        (("specsweep.record.results", "specsweep.measure.client"), True),  # a record depending on a stage
        (("specsweep.engines.vllm", "specsweep.measure.session"), True),  # a plug-in depending on a stage
        (("specsweep.analyse.aggregate", "specsweep.measure.placement"), False),
        (("specsweep.engines.vllm", "specsweep.plan.config"), True),  # the configuration is read from record/
        (("specsweep.engines.vllm", "specsweep.record.configuration"), False),
        (("specsweep.measure.adaptive", "specsweep.maths.stats"), False),  # the maths is below every stage
        (("specsweep.plan.detectable", "specsweep.maths.power"), False),
        (("specsweep.measure.adaptive", "specsweep.analyse.replicates"), True),  # an analysis is not maths
        (("specsweep.maths.stats", "specsweep.record.results"), True),  # the maths imports nothing of the package
        (("specsweep.record.results", "specsweep.maths.stats"), False),
    ],
)
def test_the_layering_check_tells_a_back_arrow(edge, wrong):
    module, target = edge
    assert bool(layering_violations({module: {target}, target: set()})) is wrong


def test_the_architecture_table_lists_every_module_once():
    """docs/architecture.md had 6 duplicate rows and missed 9 modules: its table is checked against the tree."""
    text = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    table = text[text.index("## Library modules") : text.index("## Tests")]
    listed = re.findall(r"^\| `([^`]+)` \|", table, re.MULTILINE)
    modules = {
        str(path.relative_to(PACKAGE).with_suffix(""))
        if path.name != "__init__.py"
        else str(path.parent.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "__main__.py" and (path.name != "__init__.py" or "\ndef " in path.read_text())
    }
    assert sorted(m for m in set(listed) if listed.count(m) > 1) == []
    assert set(listed) == modules - {"."}, (sorted(modules - set(listed)), sorted(set(listed) - modules))
