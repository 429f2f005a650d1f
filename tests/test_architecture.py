"""The floor plan, pinned (issue 21; drawn in docs/architecture.md).

An ``ast`` pass over ``src/somnid/``: the rooms above the services (``api/``, ``tools/``,
``dream/``, ``history/``, ``cli/``) reach memory files and the index only through the
services, by import and by attribute; no module grows past 450 lines; and each file of the
data dir has one owner, the only modules that write, move or delete files there.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "somnid"

OUTER = ("api", "ui", "server", "tools", "dream", "history", "sync", "cli")
"""The rooms that must go through the services' doors."""

STORE_OPEN = {
    "somnid.store.layout",  # where things are: names only
    "somnid.store.frontmatter",  # the file format, for a room's own files
    "somnid.store.atomic",  # the atomic write, for a room's own files (see OWNERS)
    "somnid.store.lock",  # the data dir's lock, for the CLI and the server edge
    "somnid.store.modes",  # file modes: doctor's check
    "somnid.store.reader",  # MAX_FILE_BYTES and BrokenReport, values only
}
"""The only store modules the outer rooms may import; never store.memories (the store)."""

RECALL_OPEN = {
    "somnid.recall.system",  # RecallSystem, its status values
    "somnid.recall.assoc",  # the hint gate's values (Decision, estimate_tokens)
    "somnid.recall.offline",  # the CLI's door while no daemon runs
}
RECALL_VALUES = {"somnid.recall.engine": {"Hit", "Outcome"}}
"""Values the outer rooms may name from an otherwise closed recall module."""

CLOSED_ATTRIBUTES = {
    "store",
    "_store",
    "engine",
    "_engine",
    "_index",
    "_worker",
    "reconciler",
    "_reconciler",
}
"""Attributes no outer room reads, whatever they belong to (services keep them private)."""

CLOSED_UNLESS_CALLED = {"index", "worker"}
"""Attributes an outer room may call as a method (``names.index(x)``) but never read."""

MAX_LINES = 450

WRITES = {"write_atomic", "move_atomic", "append_durably", "unlink", "rmtree", "rmdir", "remove"}
"""Calls that write, move or delete a file (``os.replace`` is store/atomic's own)."""

OWNERS = {
    "somnid/store/": "memory/ and skills/ entries (reads, writes, moves, deletes), the lock,"
    " upkeep's clock",
    "somnid/sessions/": "session logs: session-log/ and its archive",
    "somnid/dream/journal.py": "dream journals",
    "somnid/history/git.py": ".git and .gitignore (git's own files)",
    "somnid/history/audit.py": "audit.log (what purge and revert did)",
    "somnid/recall/": "index/",
    "somnid/embed/": "models/",
    "somnid/security.py": "the token",
    "somnid/server/daemon_file.py": "daemon.json",
    "somnid/cli/serve.py": "a write probe of its own before the daemon starts",
    "somnid/cli/service.py": "the systemd user unit (outside the data dir)",
}
"""Each file of the data dir and the one room that writes or deletes it."""


@dataclass(frozen=True, slots=True)
class Module:
    path: Path
    name: str  # somnid.api.routes.health
    tree: ast.Module

    @property
    def rel(self) -> str:
        return str(self.path.relative_to(SRC.parent))

    @property
    def room(self) -> str:
        parts = self.name.split(".")
        return parts[1] if len(parts) > 2 else ""


def modules() -> Iterator[Module]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield Module(path, name, ast.parse(path.read_text(encoding="utf-8"), str(path)))


def imports(tree: ast.AST) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names imported from it) for every import, lazy ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [alias.name for alias in node.names]


def import_violations(module: Module) -> list[str]:
    found = []
    for line, target, names in imports(module.tree):
        where = f"{module.rel}:{line} imports {target}"
        if target == "somnid.store" and set(names) - {"frontmatter"}:
            found.append(f"{where} ({', '.join(names)})")
        elif target.startswith("somnid.store.") and target not in STORE_OPEN:
            found.append(where)
        elif target.startswith("somnid.recall.") and target not in RECALL_OPEN:
            closed = set(names) - RECALL_VALUES.get(target, set())
            if closed or not names:
                found.append(f"{where} ({', '.join(sorted(closed))})")
    return found


def attribute_violations(module: Module) -> list[str]:
    called = {
        id(node.func) for node in ast.walk(module.tree) if isinstance(node, ast.Call)
    }  # attributes called as methods: ``ids.index(x)``
    found = []
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr in CLOSED_ATTRIBUTES or (
            node.attr in CLOSED_UNLESS_CALLED and id(node) not in called
        ):
            found.append(f"{module.rel}:{node.lineno} reads .{node.attr}")
        elif node.attr == "recall" and getattr(node.value, "attr", None) == "recall":
            found.append(f"{module.rel}:{node.lineno} reads .recall.recall (the engine)")
    return found


def write_calls(module: Module) -> list[str]:
    found = []
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in WRITES:
            continue
        if name == "remove" and not (
            isinstance(func, ast.Attribute) and getattr(func.value, "id", None) == "os"
        ):
            continue  # list.remove, set.remove
        found.append(f"{module.rel}:{node.lineno} calls {name}")
    return found


def owner_of(module: Module) -> str | None:
    rel = module.rel
    return next((owned for prefix, owned in OWNERS.items() if rel.startswith(prefix)), None)


def test_the_outer_rooms_import_no_store_and_no_index() -> None:
    found = [v for m in modules() if m.room in OUTER for v in import_violations(m)]
    assert found == []


def test_the_outer_rooms_reach_through_no_service() -> None:
    found = [v for m in modules() if m.room in OUTER for v in attribute_violations(m)]
    assert found == []


def test_no_module_is_over_450_lines() -> None:
    sizes = {m.rel: len(m.path.read_text(encoding="utf-8").splitlines()) for m in modules()}
    assert {rel: n for rel, n in sizes.items() if n > MAX_LINES} == {}


def test_only_a_files_owner_writes_or_deletes_it() -> None:
    found = [v for m in modules() if owner_of(m) is None for v in write_calls(m)]
    assert found == []


def test_the_owners_are_documented() -> None:
    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for prefix in OWNERS:
        assert f"`{prefix.removeprefix('somnid/')}`" in doc, prefix


VIOLATIONS = {
    "import": (
        "somnid/api/bad.py",
        "from somnid.store.memories import MemoryStore\n",
        import_violations,
    ),
    "import of the index": (
        "somnid/tools/bad.py",
        "from somnid.recall.index import INDEXED_KINDS\n",
        import_violations,
    ),
    "reach-through": (
        "somnid/dream/bad.py",
        "def f(runtime):\n    return runtime.memories.store.scan\n",
        attribute_violations,
    ),
    "the index read": (
        "somnid/cli/bad.py",
        "def f(system):\n    return system.index.rows()\n",
        attribute_violations,
    ),
    "the engine": (
        "somnid/api/bad.py",
        "def f(runtime):\n    return runtime.recall.recall.latency\n",
        attribute_violations,
    ),
    "a delete": (
        "somnid/history/bad.py",
        "def f(path):\n    path.unlink()\n",
        write_calls,
    ),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_each_rule_sees_its_violation(case: str) -> None:
    rel, source, rule = VIOLATIONS[case]
    path = SRC.parent / rel
    module = Module(path, rel.removesuffix(".py").replace("/", "."), ast.parse(source))
    assert module.room in OUTER
    assert owner_of(module) is None
    assert len(rule(module)) == 1


def test_a_method_named_like_a_part_is_no_reach_through() -> None:
    source = "def f(ids, x):\n    return ids.index(x)\n"
    module = Module(SRC / "dream" / "ok.py", "somnid.dream.ok", ast.parse(source))
    assert attribute_violations(module) == []
