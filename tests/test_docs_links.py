"""Every link of the README and docs/ resolves, and every docs reference the tool prints does.

A relative link names a file that exists; a ``#anchor`` names a heading of the target page
(as GitHub slugs it) or an explicit ``<a id="...">``. The tool's own references — the pages of
``engine.docsref.PAGES``, a decision table row for each row of ``engine.decision.ROWS``, and
every ``docs/<page>.md[#anchor]`` written in the package's code and schemas — resolve the same
way. Pure file reads: no git, no subprocess.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from relconsole.engine import docsref
from relconsole.engine.decision import ROWS

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']""")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`[^`]*`")
DOCS_REF = re.compile(r"docs/[\w.-]+\.md(?:#[\w-]+)?")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: links and code reduced to their text, lower case,
    punctuation dropped (letters, digits, ``-`` and ``_`` kept), spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a ``# comment`` in a shell block is no heading)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def anchors(path: Path) -> set[str]:
    """Every anchor a link may name in ``path``: heading slugs (a repeated one gets ``-1``,
    ``-2`` ... as on GitHub) and explicit ``<a id=...>`` names."""
    found, seen = set(), {}
    for line in prose_lines(path.read_text(encoding="utf-8")):
        found.update(EXPLICIT.findall(line))
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The targets of the inline links and images of ``path`` outside code."""
    out = []
    for line in prose_lines(path.read_text(encoding="utf-8")):
        out += LINK.findall(INLINE_CODE.sub("", line))
    return out


def unresolved(target: str, source: Path) -> str | None:
    """Why ``target`` (a link in ``source``) does not resolve, or None. Links with a scheme
    (https:, mailto:) are not checked."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
        return None
    path_part, _, anchor = target.partition("#")
    file = (source.parent / path_part).resolve() if path_part else source
    if not file.exists():
        return f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}"
    if anchor and file.suffix == ".md" and anchor not in anchors(file):
        return f"{target}: no heading or <a id> '{anchor}' in {file.relative_to(ROOT)}"
    return None


def test_the_docs_pages_are_there_and_the_checks_see_links_and_anchors():
    names = {p.name for p in PAGES}
    assert {"README.md", "decision-table.md", "catalog.md", "judge.md", "console.md"} <= names
    assert sum(len(links(p)) for p in PAGES) > 50  # a link pattern that matched nothing would pass
    assert {f"row-{n}" for n in ROWS} <= anchors(ROOT / "docs" / "decision-table.md")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    broken = [why for target in links(page) if (why := unresolved(target, page))]
    assert not broken, broken


def test_every_page_docsref_names_exists():
    missing = [path for path in docsref.PAGES.values() if not (ROOT / path).is_file()]
    assert not missing, missing


def test_every_decision_row_a_message_names_resolves():
    for row in ROWS:
        words = docsref.decision_row(row)
        [ref] = DOCS_REF.findall(words)
        assert unresolved(ref, ROOT / "README.md") is None, words


def _package_texts() -> list[tuple[Path, str]]:
    files = sorted((ROOT / "relconsole").rglob("*.py")) + sorted((ROOT / "relconsole" / "schemas").glob("*.json"))
    return [(p, p.read_text(encoding="utf-8")) for p in files]


def test_every_docs_path_written_in_the_package_resolves():
    """Messages, help texts and schema descriptions that name ``docs/<page>.md#anchor`` by hand
    (the pytest plugin writes its path out; schemas cannot call docsref) point at something."""
    refs = {(path, ref) for path, text in _package_texts() for ref in DOCS_REF.findall(text)}
    assert len(refs) >= 10
    broken = [f"{path.relative_to(ROOT)}: {ref}" for path, ref in sorted(refs)
              if unresolved(ref, ROOT / "README.md") is not None]
    assert not broken, broken


def test_docsref_anchors_used_by_the_code_resolve():
    """``doc_path``/``see``/``doc_url`` calls with literal arguments name a page and an anchor
    that exist (a renamed heading fails here, not in a user's terminal)."""
    call = re.compile(r"""\b(?:doc_path|see|doc_url)\(\s*["']([\w-]+)["'](?:\s*,\s*["']([\w-]+)["'])?\s*\)""")
    used = {(page, anchor or "") for _, text in _package_texts() for page, anchor in call.findall(text)}
    assert len(used) >= 5
    broken = [(page, anchor) for page, anchor in sorted(used)
              if page not in docsref.PAGES or
              unresolved(docsref.doc_path(page, anchor or None), ROOT / "README.md") is not None]
    assert not broken, broken


def test_the_slug_is_githubs():
    assert slug("A miss is the patch's only when the base holds") == "a-miss-is-the-patchs-only-when-the-base-holds"
    assert slug("Validate: the catalog holds on its base") == "validate-the-catalog-holds-on-its-base"
    assert slug("`relconsole gate` in CI") == "relconsole-gate-in-ci"
    assert slug("Bite: does the relation catch anything?") == "bite-does-the-relation-catch-anything"
