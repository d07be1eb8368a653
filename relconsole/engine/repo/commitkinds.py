"""What a console commit may hold (SPEC §9 table): its kinds, the file changes it is made of
(``FileChange``), and for each kind which changes it allows (``check_kind``).

A quarantine commit either adds drafts (new files, or lines appended with every old byte
kept) or removes them (files deleted, or lines dropped), never both; a catalog commit may
also remove quarantine files it accepted from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from relconsole.engine.repo.config import Layout
from relconsole.engine.errors import CommitRefused, UsageError

KINDS = {"catalog": "catalog:", "freeze": "freeze:", "lease": "lease:", "quarantine": "quarantine:",
         "review": "review:", "init": "oracle: init"}


@dataclass(frozen=True)
class FileChange:
    """One repository-relative POSIX path the console changes: new bytes, or None to delete."""

    path: str
    content: bytes | None



def check_kind(kind: str, changes: Sequence[FileChange], layout: Layout,
               read_old: Callable[[str], bytes | None]) -> None:
    """Refuse ``changes`` that a commit of ``kind`` may not contain (SPEC §9 table).

    ``read_old(path)`` gives the path's bytes on the target branch tip (None: absent); it
    decides whether a quarantine file was removed or shrunk (lines dropped, none added or
    edited) or drafted (created, or lines appended). Raises UsageError for an unknown kind and CommitRefused naming the first
    offending path, or when ``changes`` is empty.
    """
    if kind not in KINDS:
        raise UsageError(f"unknown commit kind {kind!r} (one of {', '.join(KINDS)})")
    if not changes:
        raise CommitRefused(f"{kind}: nothing to commit")
    rule = {"catalog": _check_catalog, "freeze": _check_freeze, "lease": _check_lease,
            "quarantine": _check_quarantine, "review": _check_review, "init": _check_init}[kind]
    rule(changes, layout, read_old)


def _check_catalog(changes, layout, read_old) -> None:
    edits_catalog = False
    for change in changes:
        if change.path == layout.catalog or _is_seeds_file(change.path, layout):
            edits_catalog = True
        elif _under(change.path, layout.quarantine_dir):
            _require_removed_or_shrunk(change, read_old(change.path), "catalog")
        else:
            raise CommitRefused(
                f"catalog: commit may not contain {change.path} (only {layout.catalog}, "
                f"seeds under {layout.seeds_dir}/, and removals from {layout.quarantine_dir}/)")
    if not edits_catalog:
        raise CommitRefused(
            "catalog: commit changes neither the catalog nor a seeds file; "
            "removing quarantine files alone is a quarantine: commit")


def _check_freeze(changes, layout, read_old) -> None:
    for change in changes:
        if change.path != layout.freezes:
            raise CommitRefused(f"freeze: commit may contain only {layout.freezes}, not {change.path}")


def _check_init(changes, layout, read_old) -> None:
    if read_old(layout.catalog) is not None:
        raise CommitRefused(f"oracle: init: the branch already has {layout.catalog}")
    oracle = layout.catalog.split("/", 1)[0] + "/"
    for change in changes:
        if not (change.path.startswith(oracle) or change.path == "pyproject.toml"):
            raise CommitRefused(f"oracle: init may contain only the oracle and pyproject.toml, not {change.path}")


def _check_review(changes, layout, read_old) -> None:
    for change in changes:
        if change.path != layout.acks:
            raise CommitRefused(f"review: commit may contain only {layout.acks}, not {change.path}")


def _check_lease(changes, layout, read_old) -> None:
    for change in changes:
        if not (_under(change.path, layout.leases_dir) and change.path.endswith((".yaml", ".yml"))):
            raise CommitRefused(
                f"lease: commit may contain only a manifest under {layout.leases_dir}/, not {change.path}")
    if len(changes) != 1:
        names = ", ".join(c.path for c in changes)
        raise CommitRefused(f"lease: commit must change exactly one lease manifest, not {len(changes)} ({names})")


def _check_quarantine(changes, layout, read_old) -> None:
    """A quarantine: commit either removes or shrinks quarantine files (a reviewer deleted
    drafts) or adds them (``propose``: new files, or rows appended with every old byte
    kept), never both: a draft and a decision stay apart in the history."""
    for change in changes:
        if not _under(change.path, layout.quarantine_dir):
            raise CommitRefused(
                f"quarantine: commit may only add, remove or shrink files under "
                f"{layout.quarantine_dir}/, not change {change.path}")
    if all(_is_growth(read_old(c.path), c.content) for c in changes):
        return
    for change in changes:
        if _is_growth(read_old(change.path), change.content):
            raise CommitRefused(f"quarantine: {change.path} is drafted in a commit that also removes "
                                "drafts; a quarantine: commit either adds drafts or removes them")
        _require_removed_or_shrunk(change, read_old(change.path), "quarantine")


def _is_growth(old: bytes | None, new: bytes | None) -> bool:
    """True when ``new`` creates the file or keeps every byte of ``old`` and appends lines."""
    if new is None:
        return False
    if old is None:
        return bool(new)
    return len(new) > len(old) and new.startswith(old)


def _require_removed_or_shrunk(change: FileChange, old: bytes | None, kind: str) -> None:
    if old is None:
        raise CommitRefused(f"{kind}: {change.path} is not on the branch; there is nothing to remove")
    if change.content is None or _is_shrink(old, change.content):
        return
    raise CommitRefused(
        f"{kind}: {change.path} may only be removed or shrunk (lines dropped), not edited or grown")


def _is_shrink(old: bytes, new: bytes) -> bool:
    """True when ``new`` is ``old`` with one or more whole lines dropped."""
    old_lines, new_lines = _lines(old), _lines(new)
    if len(new_lines) >= len(old_lines):
        return False
    remaining = iter(old_lines)
    return all(any(line == candidate for candidate in remaining) for line in new_lines)


def _lines(data: bytes) -> list[bytes]:
    return re.findall(rb"[^\n]*\n|[^\n]+\Z", data)


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


def _is_seeds_file(path: str, layout: Layout) -> bool:
    return _under(path, layout.seeds_dir) and path.endswith(".jsonl")
