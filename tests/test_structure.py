"""The package's house rules, checked on the source: imports point one way (no cycle, lazy imports counted),
no module reads another's private names, few modules at the top, none too long, the CLI only above the library."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "l4lite"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(p.relative_to(PKG.parent).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _edges(mods: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """Module -> modules it imports (anywhere in it: lazy imports count), and private names read across."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    private = []
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import):
                graph[m].update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = m.split(".") if p.name == "__init__.py" else m.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    root = ".".join(base + ([node.module] if node.module else []))
                else:
                    root = node.module or ""
                if root in mods:
                    graph[m].add(root)
                for a in node.names:
                    if f"{root}.{a.name}" in mods:
                        graph[m].add(f"{root}.{a.name}")
                    elif root in mods and a.name.startswith("_") and not a.name.startswith("__"):
                        private.append(f"{m} reads {root}.{a.name}")
    for m in graph:
        graph[m].discard(m)
    return graph, private


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle, or []."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(v: str) -> list[str]:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        state[v] = 2
        path.pop()
        return []

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return []


def test_no_import_cycle_lazy_imports_included() -> None:
    graph, _ = _edges(_modules())
    assert _cycle(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_module_reads_another_modules_private_names() -> None:
    _, private = _edges(_modules())
    assert private == []


def _private_by_name(tree: ast.AST) -> list[str]:
    """``getattr(obj, "_name")`` on anything but ``self``/``cls``: a private name read around the import check."""
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and node.args[1].value.startswith("_")
                and not node.args[1].value.startswith("__")
                and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls"))):
            out.append(f"line {node.lineno}: {ast.unparse(node)}")
    return out


def test_no_private_name_is_read_through_getattr() -> None:
    found = {m: hits for m, p in _modules().items() if (hits := _private_by_name(ast.parse(p.read_text())))}
    assert found == {}


def test_the_getattr_check_sees_a_private_read() -> None:
    assert _private_by_name(ast.parse('getattr(scanner, "_progress", {})'))
    assert not _private_by_name(ast.parse('getattr(self, "_progress", {})'))


def test_the_library_never_imports_the_cli() -> None:
    graph, _ = _edges(_modules())
    wrong = sorted(f"{m} -> {t}" for m, ts in graph.items() for t in ts
                   if not m.startswith("l4lite.cli") and m != "l4lite.__main__" and t.startswith("l4lite.cli"))
    assert wrong == []


def test_few_modules_at_the_top_and_none_too_long() -> None:
    top = [p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(top) <= 12, top
    long = {str(p.relative_to(PKG)): n for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert long == {}


def test_every_subpackage_says_its_role() -> None:
    missing = [str(p.relative_to(PKG)) for p in PKG.glob("*/__init__.py")
               if len((ast.get_docstring(ast.parse(p.read_text())) or "").split()) < 8]
    assert missing == []
