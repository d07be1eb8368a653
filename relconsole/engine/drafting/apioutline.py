"""What a drafter is shown of the library itself: its public functions and methods as
``module:name(signature)`` lines, in the form a relation's ``subject`` takes, each with the
first line of its docstring.

A repository being adopted has no diff to draft from (``propose`` on the base branch), and a
model cannot guess ``hyperlink:URL.from_text`` from seeds alone (new-user trial, issue 36).
Everything is read from one commit's tree and parsed, never imported or run: the outline of a
hostile tree is text like the diff. Bounded in bytes; a note says when it is cut.
"""

from __future__ import annotations

import ast
import posixpath

from relconsole.engine.literal import counted
from relconsole.engine.repo.treeview import TreeView

OUTLINE_LIMIT_BYTES = 20_000  # about 5k tokens beside the diff's 100,000 bytes
_SKIPPED_DIRS = {"tests", "test", "testing", "docs", "doc", "examples", "benchmarks", "bench", "scripts"}


def api_outline(view: TreeView, paths: list[str], roots: tuple[str, ...] = ("", "src"),
                limit: int = OUTLINE_LIMIT_BYTES) -> str:
    """The outline of the Python files ``paths`` (repository-relative, POSIX) of ``view``'s
    commit: per module, its public top-level functions and the public methods of its public
    classes, one ``module:name(args)  # first docstring line`` line each, in file order.
    ``roots`` are the import roots a module name is taken relative to. Files that do not parse,
    private modules and tests are skipped; "" when nothing public is found. The text stops
    before ``limit`` bytes with a note of how many modules were left out."""
    lines: list[str] = []
    size, left_out = 0, 0
    for path in sorted(p for p in paths if _is_library_module(p)):
        module = module_name(path, roots)
        block = _module_lines(view.read_text(path) or "", module)
        cost = sum(len(line.encode()) + 1 for line in block)
        if not block:
            continue
        if size + cost > limit:
            left_out += 1
            continue
        lines += block
        size += cost
    if left_out:
        lines.append(f"[{counted(left_out, 'more module')} left out: the outline is capped at {limit} bytes]")
    return "\n".join(lines)


def library_modules(files: list[str]) -> list[str]:
    """The Python files of ``files`` an outline covers (tests, docs, private and setup files aside)."""
    return [p for p in files if _is_library_module(p)]


def module_name(path: str, roots: tuple[str, ...]) -> str:
    """``src/pkg/core.py`` -> ``pkg.core`` (``pkg/__init__.py`` -> ``pkg``) under the first
    root of ``roots`` the path lies in ("" is the repository root)."""
    for root in sorted(roots, key=len, reverse=True):
        prefix = root.strip("/") + "/" if root.strip("/.") else ""
        if path.startswith(prefix):
            stem = path[len(prefix):].removesuffix(".py")
            return stem.removesuffix("/__init__").replace("/", ".")
    return path.removesuffix(".py").replace("/", ".")


def _is_library_module(path: str) -> bool:
    if not path.endswith(".py"):
        return False
    parts = path.split("/")
    name = parts[-1]
    if any(p in _SKIPPED_DIRS for p in parts[:-1]) or name in ("setup.py", "conftest.py", "noxfile.py"):
        return False
    if name.startswith("test_") or name.endswith("_test.py"):
        return False
    return not any(p.startswith("_") and p != "__init__.py" for p in parts)


def _module_lines(text: str, module: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            out.append(_line(module, node.name, node))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            out.append(f"{module}:{node.name}  # class{_doc(node)}")
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
                    out.append(_line(module, f"{node.name}.{item.name}", item))
    return out


def _line(module: str, name: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    try:
        args = ast.unparse(node.args)
    except (ValueError, AttributeError):
        args = "..."
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    doc = _doc(node)
    return f"{module}:{name}({args}){returns}" + (f"  #{doc}" if doc else "")


def _doc(node) -> str:
    docstring = ast.get_docstring(node, clean=True) or ""
    first = docstring.strip().splitlines()[0].strip() if docstring.strip() else ""
    return f" {first[:120]}" if first else ""


def outline_roots(import_paths: tuple[str, ...] | None, files: list[str]) -> tuple[str, ...]:
    """The import roots for module names: the layout's, else the root plus ``src`` when the
    tree has a ``src/`` folder (the engine's default)."""
    if import_paths is not None:
        return tuple(import_paths)
    return ("", "src") if any(posixpath.dirname(p).split("/")[0] == "src" for p in files) else ("",)
