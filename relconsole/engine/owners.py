"""Touched paths mapped to the relations that own them (SPEC §3 owners, §8 exit 2).

Patterns are gitignore-style, matched with pathspec's GitIgnoreSpec (the matcher git
itself documents), and the last pattern that matches a path wins, as in CODEOWNERS.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import pathspec

from relconsole.engine.gitio import Touched

OWNED, EXEMPT, GAP, PROTECTED, UNKNOWN = "owned", "exempt", "gap", "protected", "unknown"


@lru_cache(maxsize=4096)
def _spec(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


def matches(pattern: str, path: str) -> bool:
    """True when the gitignore-style ``pattern`` matches repository-relative ``path``."""
    return _spec(pattern).match_file(path)


def winning_pattern(owners: list[tuple[str, list[str]]], path: str) -> tuple[str, list[str]] | None:
    """The last (pattern, relation ids) whose pattern matches ``path``, or None."""
    for pattern, ids in reversed(owners):
        if matches(pattern, path):
            return pattern, ids
    return None


@dataclass(frozen=True)
class Binding:
    """One touched path and its owners.

    ``state`` is ``owned`` (relations listed), ``exempt`` (winning pattern lists none),
    ``protected`` (an oracle path, flagged) or ``gap`` (no pattern matches: exit 2). For a rename that keeps an owner, the new
    path decides; a rename to an unowned place is a gap.
    """

    touched: Touched
    state: str
    pattern: str | None
    relations: tuple[str, ...]

    @property
    def path(self) -> str:
        return self.touched.path


def bind(owners: list[tuple[str, list[str]]], touched: list[Touched],
         protected_patterns: tuple[str, ...] = ()) -> list[Binding]:
    """Map each touched path to its owners; order follows ``touched``.

    A renamed path is bound by its new path, so moving a file out of its owner's
    pattern shows as a gap; the relations owning its old path still apply (moving an
    owned file into an exempt place does not drop them). A path no pattern owns but that is protected (§2) is
    ``protected``: not a gap, but a review flag, since the patch may not touch it.
    """
    out = []
    for item in touched:
        hit = winning_pattern(owners, item.path)
        # a rename also removes the old path: its owners still guard the moved code
        old = winning_pattern(owners, item.old_path) if item.status == "R" and item.old_path else None
        moved = tuple(rid for rid in (old[1] if old else ()) if not hit or rid not in hit[1])
        if hit is None and protected(protected_patterns, item.path):
            out.append(Binding(item, PROTECTED, None, moved))
        elif hit is None:
            out.append(Binding(item, GAP, None, moved))
        elif not hit[1] and not moved:
            out.append(Binding(item, EXEMPT, hit[0], ()))
        else:
            out.append(Binding(item, OWNED, hit[0], tuple(hit[1]) + moved))
    return out


def gaps(bindings: list[Binding]) -> list[Binding]:
    """The bindings that are coverage gaps."""
    return [b for b in bindings if b.state == GAP]


def protected(patterns: tuple[str, ...] | list[str], path: str) -> bool:
    """True when ``path`` falls under any protected pattern (§2 ``protected``)."""
    return any(matches(p, path) for p in patterns)
