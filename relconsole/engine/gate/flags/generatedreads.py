"""Reads of a generated module as an environment probe (SPEC §9, red team of issue 34).

``[tool.relconsole] generated`` puts the base's stub text where the build would write a module
(setuptools_scm's ``_version.py``): relations run with the stub, production with the build's
file. Code that reads such a module can therefore tell the judged tree from production
(``EXACT = version == "0.0.0"``), like any probe of its surroundings. ``generated_reads`` finds
the imports of a generated module (or of ``__version__`` from its package) that a change adds.

How a patch would beat it: read the module by a name no import shows (``importlib`` with a
computed string, ``open`` on its file, ``sys.modules``): each is an environment probe of its
own. How often honest code trips it: a package imports its version file once, in
``__init__.py``; a patch that adds another such import is rare and worth a reviewer's look.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable


def generated_modules(paths: Iterable[str], roots: list[str]) -> set[str]:
    """Dotted names of the generated ``.py`` files ``paths`` (repository paths) under the import
    ``roots`` (path prefixes, "" for the repository root)."""
    names = set()
    for path in paths:
        relative = _under_root(path, roots)
        if relative is not None:
            parts = relative[:-3].split("/")
            names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _under_root(path: str, roots: list[str]) -> str | None:
    """``path`` relative to the innermost import root that holds it (``src/`` before the
    repository root), or None: a ``.py`` file only."""
    if not path.endswith(".py"):
        return None
    for root in sorted(roots, key=len, reverse=True):
        prefix = f"{root}/" if root else ""
        if path.startswith(prefix):
            return path[len(prefix):]
    return None


def package_of(path: str, roots: list[str]) -> str | None:
    """The dotted package a repository ``.py`` path is in (its folder's name under the first
    root that holds it; "" at a root), or None when no root holds it."""
    relative = _under_root(path, roots)
    return None if relative is None else ".".join(relative.split("/")[:-1])


def generated_reads(before: str | None, after: str | None, package: str | None,
                    generated: set[str]) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of each import of a ``generated`` module that ``after`` adds to
    ``before`` (source texts, None when absent; counted by name, so moving an import adds
    nothing). ``package`` is the changed file's package (``package_of``, for relative imports). A text that
    does not parse gives none: the probe rule reports that already."""
    if not generated or after is None:
        return []
    old = Counter(name for _, name in _imports(before, package, generated))
    found = []
    for line, name in _imports(after, package, generated):
        if old[name]:
            old[name] -= 1
        else:
            found.append((line, name))
    return found


def _imports(text: str | None, package: str | None, generated: set[str]) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(text or "")
    except (SyntaxError, ValueError, RecursionError):
        return []
    packages = {name.rpartition(".")[0] for name in generated}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if _under(a.name, generated)]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            if base is None:
                continue
            if _under(base, generated):
                out.append((node.lineno, base))
            for alias in node.names:
                dotted = f"{base}.{alias.name}"
                if dotted in generated or (alias.name == "__version__" and base in packages):
                    out.append((node.lineno, dotted))
    return sorted(out)


def _under(name: str, generated: set[str]) -> bool:
    return any(name == g or name.startswith(g + ".") for g in generated)


def _absolute(name: str | None, level: int, package: str | None) -> str | None:
    """The absolute module ``from <level dots><name> import`` names in a file of ``package``."""
    if level == 0:
        return name
    if package is None:
        return None
    parts = package.split(".") if package else []
    keep = len(parts) - (level - 1)
    if keep < 0:
        return None
    return ".".join(parts[:keep] + ([name] if name else [])) or None
