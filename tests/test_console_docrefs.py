"""What the console tells a reviewer points into relconsole's docs, never to the spec a
user does not have (issue 36: "SPEC §8 row 3", "§9", "§10" pointed nowhere).

Two views: every string the console's code holds (docstrings aside: those are for the
people who change the code) is free of "§" and "SPEC"; and on the sample, the status line
names the decision table row that fired with its page in docs/, as ``docsref`` builds it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import relconsole.console
from relconsole.console.app import ReviewApp
from relconsole.console.bindings import APP_BINDINGS
from relconsole.engine import docsref
from tests.conftest import TODAY
from tests.test_console import settle
from tests.test_console_fit import rows_of

CONSOLE = Path(relconsole.console.__file__).parent


def shown_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant in ``path`` that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_string_of_the_console_cites_the_spec():
    files = sorted(CONSOLE.rglob("*.py"))
    assert len(files) > 20  # the scan sees the console, not an empty folder
    cited = [f"{path.relative_to(CONSOLE)}:{line}: {text[:60]!r}" for path in files
             for line, text in shown_strings(path) if "§" in text or "SPEC" in text]
    assert not cited, cited


def test_the_help_points_into_docs_where_it_names_a_rule():
    tooltips = [b.tooltip for b in APP_BINDINGS if b.tooltip]
    assert not [t for t in tooltips if "§" in t]
    flagged = next(b.tooltip for b in APP_BINDINGS if b.id == "merge_checklist")
    assert docsref.doc_path("commits", "review-flags") in flagged


async def test_the_status_line_names_the_row_that_fired_and_where_it_is_explained(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)  # the relations run: a row decides
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, timeout=120)
        row = app.review.decision().row
        assert row, "the sample's decision comes from a table row"
        shown = "\n".join(rows_of(app, app.query_one("#status")))
        assert f"decision table row {row}:" in shown
        assert docsref.doc_path("decision-table", f"row-{row}") in shown
        assert "§" not in shown
