"""Pane filters (issue 7): the ``/`` text filter and one quick filter per pane.

Pure functions over the items a pane lists (``(id, prompt Text, disabled)``) and the
engine Review, so they test without a terminal. A text filter keeps the items whose
plain text contains every whitespace-separated term, case-insensitively. A quick filter
keeps the items in the pane's problem state, decided from engine data, never from the
words on screen:

========== ==================================================================
pane       quick filter keeps
========== ==================================================================
touched    unowned paths (no relation owns them: exit 2, SPEC §3)
relations  missed relations (and bad-file errors, which block every decision)
leases     expiring or expired dataset leases, expired workspace leases (§4, §5)
quarantine rejected candidates and seed rows (§10)
========== ==================================================================
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from relconsole.engine.gate.review import Review


class QuickFilter(NamedTuple):
    """A pane's quick filter: ``label`` for the footer and palette, ``title`` for the pane."""

    label: str
    title: str


QUICK_FILTERS = {
    "touched": QuickFilter("Unowned only", "unowned paths"),
    "relations": QuickFilter("Missed only", "missed relations"),
    "leases": QuickFilter("Expiring only", "expiring or expired leases"),
    "quarantine": QuickFilter("Rejected only", "rejected candidates"),
}
EXPIRING_STATES = ("expiring", "expired")


def terms(text: str) -> list[str]:
    """The casefolded terms of a filter text (empty text: no terms, everything matches)."""
    return text.casefold().split()


def text_match(wanted: list[str], plain: str) -> bool:
    """True when every term occurs in ``plain`` (case-insensitive)."""
    folded = plain.casefold()
    return all(term in folded for term in wanted)


def quick_predicate(review: Review, kind: str) -> Callable[[str], bool]:
    """``keep(item_id)`` for ``kind``'s quick filter, with its lookups built once (O(items))."""
    if kind == "touched":
        return lambda oid: oid.startswith("t:") and review.bindings[int(oid[2:])].state == "gap"
    if kind == "relations":
        return lambda oid: oid.startswith("e:") or (
            oid.startswith("r:") and getattr(review.results.get(oid[2:]), "outcome", None) == "missed")
    if kind == "leases":
        expiring = {f"l:{s.source}" for s in review.leases if s.state in EXPIRING_STATES}
        expiring |= {f"w:{w.workspace}" for w in review.workspace_leases if w.seconds_left() <= 0}
        return expiring.__contains__
    if kind == "quarantine":
        rejected = {f"c:{c.path}" for c in review.candidates if not c.valid}
        rejected |= {f"s:{r.key}" for r in review.seed_rows if not r.valid}
        return rejected.__contains__
    raise ValueError(f"no quick filter for pane {kind!r}")


def apply(review: Review | None, kind: str, items: list, text: str = "", quick: bool = False) -> list:
    """The items to show: those matching ``text`` and, when ``quick``, the quick filter.

    Headers (disabled items) stay when an item under them stays, so drafted seed rows keep
    their relation's name. With no filter the list is returned as it is.
    """
    wanted = terms(text)
    if not wanted and not quick:
        return items
    keep_quick = quick_predicate(review, kind) if quick and review is not None else None
    shown: list = []
    header = None
    for item in items:
        oid, prompt, disabled = item[0], item[1], item[2]
        if disabled:
            header = item
            continue
        if keep_quick is not None and not keep_quick(oid):
            continue
        if wanted and not text_match(wanted, prompt.plain):
            continue
        if header is not None:
            shown.append(header)
            header = None
        shown.append(item)
    return shown


def count(items: list) -> int:
    """How many selectable (not disabled) items ``items`` holds."""
    return sum(1 for item in items if not item[2])


def describe(kind: str, text: str, quick: bool, shown: int, total: int, owners: str | None = None) -> str:
    """The pane-title suffix for active filters, count first so a narrow pane still shows
    it, e.g. `` · 3 of 5,000 · owners of src/a.py · missed relations · /cache · esc clears``
    (empty with no filter). ``owners`` is the path the relations are narrowed to."""
    parts = []
    if owners is not None:
        parts.append(f"owners of {owners}")
    if quick:
        parts.append(QUICK_FILTERS[kind].title)
    if text.strip():
        parts.append("/" + " ".join(text.split()))
    if not parts:
        return ""
    return f" · {shown:,} of {total:,} · " + " · ".join(parts) + " · esc clears"


def empty_text(kind: str, text: str, quick: bool) -> str:
    """What an emptied pane says, so a filter never looks like missing data."""
    what = QUICK_FILTERS[kind].title if quick else "items"
    match = f" matching /{' '.join(text.split())}" if text.strip() else ""
    return f"no {what}{match} (esc clears the filter)"
