"""Where relconsole's own documentation lives, for the text a user reads.

Messages, SARIF rules and summaries point into the ``docs/`` folder of relconsole's
repository (shipped in the sdist, browsable on the project's home), never to a document a
user does not have. ``PAGES`` names each page once; everything else builds references
from it, so a page moved is one edit here and a failing link test.

The absolute form (``doc_url``) starts at the ``Documentation`` URL of the installed
package's metadata (``[project.urls]`` in relconsole's pyproject.toml), so a fork that
publishes its own docs changes one line of metadata, not the code.
"""

from __future__ import annotations

from functools import cache

# page key -> path in relconsole's repository
PAGES = {
    "index": "docs/README.md",
    "layout": "docs/layout.md",              # where a reviewed repository keeps its oracle
    "catalog": "docs/catalog.md",            # relations, kinds, fields, adapters, canon, owners
    "leases": "docs/leases.md",              # dataset leases, pins, workspace leases
    "freezes": "docs/freezes.md",            # the counted freeze
    "judge": "docs/judge.md",                # how a relation is run, replayed and signed
    "decision-table": "docs/decision-table.md",
    "commits": "docs/commits.md",            # commit discipline, review flags, acknowledgements
    "quarantine": "docs/quarantine.md",      # model-drafted relations
    "console": "docs/console.md",
    "cli": "docs/cli.md",                    # every command, exit codes, shell completion
    "pytest": "docs/pytest-plugin.md",       # pytest --relconsole
    "ci": "docs/ci.md",                      # install, CI workflows, pre-commit, outputs
    "rules": "docs/rules.md",                # one section per SARIF rule / flag kind
}

FALLBACK_DOCS_URL = "https://github.com/relconsole/relconsole/blob/main/docs/"


def doc_path(page: str, anchor: str | None = None) -> str:
    """``docs/<page>.md`` or ``docs/<page>.md#<anchor>``: repository-relative, POSIX.
    Raises KeyError for a page not in ``PAGES`` (a typo is a bug, not a dead link)."""
    path = PAGES[page]
    return f"{path}#{anchor}" if anchor else path


def doc_url(page: str, anchor: str | None = None) -> str:
    """The absolute URL of ``doc_path(page, anchor)`` under the package's Documentation URL."""
    relative = doc_path(page, anchor).removeprefix("docs/")
    return docs_base_url() + relative


@cache
def docs_base_url() -> str:
    """The ``Documentation`` project URL of the installed metadata, ending in ``/``; the
    project's own home when the metadata has none (a source tree never installed)."""
    try:
        from importlib.metadata import PackageNotFoundError, metadata
        for entry in metadata("relconsole").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() == "documentation" and url.strip():
                return url.strip().rstrip("/") + "/"
    except PackageNotFoundError:
        pass
    return FALLBACK_DOCS_URL


def decision_row(row: int | str) -> str:
    """``decision table row 3 (docs/decision-table.md#row-3)``: how a message names a row of
    the decision table."""
    return f"decision table row {row} ({doc_path('decision-table', f'row-{row}')})"


def see(page: str, anchor: str | None = None) -> str:
    """``see docs/<page>.md[#anchor]``: the tail a one-line message ends with."""
    return f"see {doc_path(page, anchor)}"
