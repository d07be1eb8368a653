"""pytest plugin: catalog relations as test items, hand-written relation tests (SPEC §3, §6, §7).

Registered through the ``pytest11`` entry point ``relconsole``; inactive unless
``pytest --relconsole`` is given (the ``relation`` marker is always registered).
It is a thin front end over the engine, like the CLI: the review comes from
``load_review`` (the oracle read from the base ref, §2), relations run through
``run_review`` (worker processes, the §6 counted freeze), verdicts are the engine's,
and the results file is ``engine.gate.report.run_payload``, the ``relconsole run --json``
document.

Options (all but ``--relconsole`` need ``--relconsole``; given alone they are a usage
error, so a CI job cannot think it gates on relations when it does not)::

    --relconsole               add the catalog relations as test items
    --relconsole-base REF      base ref the oracle is read from (default: base_ref in pyproject.toml, else main, else origin/HEAD)
    --relconsole-today DATE    day leases and freezes are judged on (default: $RELCONSOLE_TODAY, else today)
    --relconsole-all           every catalog relation (a nightly); default: only the relations
                               owning a path touched between the merge base and HEAD (a PR gate,
                               the same set ``relconsole run`` runs)
    --relconsole-json PATH     results file (default: <git dir>/relconsole/pytest-results.json,
                               outside the work tree)
    --relconsole-report-only   record the decision; do not fail the session on it

What it adds to a normal pytest run (the repository's own tests are collected and run
as usual):

* one item per relation, ``relconsole::<relation id>``, placed before the other tests.
  All selected relation items are evaluated together (in parallel worker processes)
  when the first of them runs, on HEAD's commit with the base's oracle overlaid, exactly
  as ``relconsole run`` does: uncommitted changes are not seen by catalog relations.
  ``held`` passes; ``missed`` and ``blocked`` fail with one line (decision, reason,
  summary with freeze counts, the first run's disagreeing keys); a frozen pass
  ("frozen 4/5, needed 4: PASS") passes, the counts in ``user_properties`` (junit
  ``<properties>``) and a ``relconsole`` report section. An item is never skipped.
* ``@pytest.mark.relation("id")`` on a test (a Python-defined relation, §3) reports it
  under that relation id. A LIVE freeze for the id turns a failure into ``reruns``
  complete reruns (setup, call, teardown each time) and a pass only with ``pass_needed``
  of them passing (§6); an expired or invalid freeze is ignored and the failure says
  why ("freeze expired on YYYY-MM-DD: mandatory again"). A relation test that skips or
  xfails fails: a relation is never skipped (§6). An id the catalog does not define, or
  a malformed marker, is a collection error naming the test.

Errors: a path outside git, an unknown base ref, a bad ``--relconsole-today`` or
``RELCONSOLE_TODAY``, and any bad oracle file (each as one ``file:line: message`` line)
are pytest usage errors (exit 4) raised before collection, never tracebacks.

The results file is the ``run --json`` document (see ``engine.gate.report``) over the
relation items that ran, plus::

    "tests": [{"test_id": nodeid, "relation_id", "path", "in_protected_tree": bool,
               "outcome": "held|missed", "decision", "reason", "row", "summary",
               "first_run": attempt, "reruns": [attempt, ...],
               "freeze": row + {"state", "why"} | None}, ...]
        where attempt = {"attempt": n, "held": bool, "error": one line, "seconds": float}
    "scope": "touched|all", "base": ref, "base_tip", "merge_base", "head": sha,
    "today": "YYYY-MM-DD", "oracle_from": "base"

The top-level decision is the catalog's (``Review.decision`` for touched relations, the
worst result with ``--relconsole-all``), made worse by any hand-written test's verdict.
The session fails (exit 1, like ``--cov-fail-under``) when that decision is not pass or a
counted freeze, or a touched path is a coverage gap, even when every item passed (a
review-flag reject has no failing item); the terminal summary says why.
``--relconsole-report-only`` records the decision without failing the session.
The engine is imported only under ``--relconsole`` (``relconsole.pytest_session``).

Under pytest-xdist (``pytest -n N``) the controller runs every relation of the scope once,
before the workers start, and hands each worker the outcomes to report (no worker runs a
relation); the controller collects the hand-written relation tests from the workers'
reports and writes the one complete results file.
"""

from __future__ import annotations

import pytest

MARKER = "relation"


def pytest_addoption(parser: pytest.Parser) -> None:
    # docsref.PAGES["pytest"], written out: without --relconsole the plugin imports nothing of the
    # engine (tests/test_docs_links.py checks every docs path written in the package)
    group = parser.getgroup("relconsole", "relconsole relations (docs/pytest-plugin.md)")
    group.addoption("--relconsole", action="store_true", default=False,
                    help="add the catalog relations of this repository as test items")
    group.addoption("--relconsole-base", default=None, metavar="REF",
                    help="base ref the oracle is read from (default: base_ref in pyproject.toml, else main, else origin/HEAD)")
    group.addoption("--relconsole-today", default=None, metavar="YYYY-MM-DD",
                    help="day leases and freezes are judged on (default: RELCONSOLE_TODAY, else today)")
    group.addoption("--relconsole-all", action="store_true", default=False,
                    help="every catalog relation, not only those owning a touched path (nightly)")
    group.addoption("--relconsole-json", default=None, metavar="PATH",
                    help="results file (default: <git dir>/relconsole/pytest-results.json)")
    group.addoption("--relconsole-report-only", action="store_true", default=False,
                    help="record the decision without failing the session on it")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(relation_id): a hand-written relation test reporting under a catalog "
                   "relation id; with --relconsole, a live freeze for it counts reruns")
    if "--relconsole" in map(str, config.invocation_params.args):
        config.option.relconsole = True  # given by the person running pytest: no hook of the tree unsets it
    if not config.getoption("relconsole"):
        given = [name for name, dest in (("--relconsole-base", "relconsole_base"),
                                         ("--relconsole-today", "relconsole_today"),
                                         ("--relconsole-all", "relconsole_all"),
                                         ("--relconsole-json", "relconsole_json"),
                                         ("--relconsole-report-only", "relconsole_report_only"))
                 if config.getoption(dest)]
        if given:
            raise pytest.UsageError(f"{', '.join(given)} needs --relconsole")
        return
    _refuse_configured_options(config)
    from relconsole.pytest_session import RelconsoleSession  # the engine loads only under --relconsole
    config.pluginmanager.register(RelconsoleSession(config, MARKER), "relconsole-session")


_GATE_OPTIONS = ("--relconsole-base", "--relconsole-today", "--relconsole-all", "--relconsole-json")


def _refuse_configured_options(config: pytest.Config) -> None:
    """The gate's options count only on the command line: from ``addopts`` (the patch's own
    ``pyproject.toml``/``pytest.ini``) a patch could read its oracle from itself
    (``--relconsole-base HEAD``), move the day, or collect only. A usage error names them."""
    given = [str(a) for a in config.invocation_params.args]
    def on_command_line(flag: str) -> bool:
        return any(a == flag or a.startswith(flag + "=") for a in given)
    configured = [flag for flag in _GATE_OPTIONS
                  if config.getoption(flag.lstrip("-").replace("-", "_")) and not on_command_line(flag)]
    if config.option.collectonly and not any(on_command_line(f) for f in ("--co", "--collect-only")):
        configured.append("--collect-only")
    if configured:
        raise pytest.UsageError(f"relconsole: {', '.join(configured)} came from the configuration (addopts), "
                                "not the command line: the reviewed tree may not set the gate's options")
