"""What each kind of gate finding means and what a reviewer does about it: the one source of
the help that SARIF rules, GitHub annotations and ``docs/rules.md`` carry.

``RULES`` maps a rule id (a SARIF ``ruleId``, or a tool-execution notification's descriptor id)
to a ``Rule``: a one-line title, what it means, what the reviewer does, the decision table row
it is (if any) and a docs page to read further. Every id the gate's outputs can emit is here:
relation reasons the table does not know become ``run_error``, unknown flags ``review_flag``,
unknown checklist items ``checklist`` (``relation_rule``, ``flag_rule``, ``checklist_rule``).

``docs/rules.md`` is generated from ``RULES``, one section per id under an explicit anchor
(the id lowercased, ``.`` made ``-``); a test checks the file is up to date::

    python -m relconsole.engine.gate.rulehelp > docs/rules.md
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from relconsole.engine.docsref import doc_path, doc_url

RELATION, FLAG, PATCH, CHECKLIST, TOOL = "relation", "flag", "patch", "checklist", "tool"
GROUPS = {RELATION: "Relations that did not pass", FLAG: "Review flags", PATCH: "The patch as a whole",
          CHECKLIST: "The merge checklist",
          TOOL: "Tool failures (tool-execution notifications, not results: nothing was decided about the code)"}
RUN_ERROR, REVIEW_FLAG, CHECKLIST_ITEM = "run_error", "review_flag", "checklist"
ACK = ("Read the flagged code. If it is right, acknowledge the flag by its id (the message and the job "
       "summary give it): `relconsole ack <flag id> --reason \"what you checked\"`, one `review:` commit "
       "on the base branch (an author of the patch cannot acknowledge it). Otherwise ask for the change "
       "to be undone.")
FIX_OR_RECATALOG = ("Read the relation's statement, the two values and the input in the message. If the "
                    "patch is wrong, fix the code; the next gate runs the relation again. If the new "
                    "behaviour is intended, the relation must change with it: the catalog's owner changes "
                    "it in a `catalog:` commit on the base branch (a patch cannot change the oracle that "
                    "judges it).")


@dataclass(frozen=True)
class Rule:
    """One rule: ``id``, its ``group`` (a key of GROUPS), a one-line ``title``, what it
    ``means``, what the reviewer ``does``, the decision table ``row`` it is (None: no row) and
    ``see`` (a docsref page key, anchor or None) for more."""

    id: str
    group: str
    title: str
    means: str
    does: str
    row: int | None = None
    see: tuple[str, str | None] | None = None


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {rule.id: rule for rule in rules}


RULES: dict[str, Rule] = _rules(
    # relations -------------------------------------------------------------------------------
    Rule("property_fail", RELATION, "The relation missed on every run on HEAD",
         "Run on the patch's commit, the relation's outputs disagreed on every run, while it holds on the merge "
         "base: the patch changed what the relation protects. The result sits on the changed lines the "
         "relation's subject ran.", FIX_OR_RECATALOG, 3, ("judge", None)),
    Rule("freeze_fail", RELATION, "Too few reruns held under the relation's freeze",
         "The relation has a live counted freeze (an intermittent miss tolerated until it expires), but fewer "
         "of its reruns held than the freeze needs: the miss is more frequent on HEAD.",
         "Treat it as a miss: fix the code. Do not loosen the freeze to let the patch through.", None,
         ("freezes", None)),
    Rule("fixture_drift", RELATION, "The replay read another input than the one pinned",
         "The input file the relation read on replay does not match its pin (the lease's sha256): the corpus "
         "changed under the relation.",
         "Restore the corpus; or, if the new corpus is right, the lease's owner re-pins it "
         "(`relconsole lease rehash`, one `lease:` commit).", 4, ("leases", None)),
    Rule("second_replay_required", RELATION, "A quarantined candidate needs a second replay",
         "The relation is a drafted candidate not yet confirmed: one replay is not enough to judge a patch by it.",
         "Replay it once more on a new workspace lease (`relconsole confirm <candidate>`); the gate then "
         "decides again.", 5, ("quarantine", None)),
    Rule("miss_not_on_base", RELATION, "The miss on HEAD is not the merge base's",
         "The relation misses on both sides, but the miss on HEAD has another signature than the merge base's: "
         "the patch changed how it misses.", FIX_OR_RECATALOG, 6, ("judge", None)),
    Rule("freeze_missing_expiry", RELATION, "A proposed freeze has no expiry date",
         "A freeze tolerates a miss for a time; one without an `expires_at` date would tolerate it for ever.",
         "Give the freeze a date: `relconsole freeze <relation> --reason \"…\" --expires YYYY-MM-DD`.", 7,
         ("freezes", None)),
    Rule("intermittent_on_base", RELATION, "An intermittent miss the merge base shows too",
         "The relation misses on some runs only, and the merge base shows the same intermittent miss: it is "
         "not the patch's.",
         "Make the relation or its subject deterministic; or, to accept the miss for a while, commit a counted "
         "freeze (`relconsole freeze <relation> --reason \"…\"`), whose reruns must then hold.", 8,
         ("freezes", None)),
    Rule("freeze_not_allowed", RELATION, "The relation may not be frozen",
         "An intermittent miss the merge base shows too, but the relation's freeze policy forbids freezing it.",
         "Make the subject or the relation deterministic, or fix the patch; a freeze is not an option here.", 8,
         ("freezes", None)),
    Rule("oracle_fault", RELATION, "The relation does not hold before the patch",
         "The relation misses on every run on the merge base too, or an adapter of the oracle failed: the miss "
         "is the oracle's, not the patch's. The result sits at the relation's line in the catalog.",
         "The catalog's owner fixes the relation, its seeds or its adapters in a `catalog:` commit on the base "
         "branch; then run the gate again.", None, ("catalog", None)),
    Rule("not_comparable", RELATION, "Outputs of a type relconsole cannot compare",
         "The subject returned a value of a type with no way to compare it, so the relation judged nothing and "
         "fails closed.", "Declare how to compare the type: a `canon:` adapter on the relation (catalog docs).",
         None, ("catalog", None)),
    Rule("vacuous_output", RELATION, "The relation held only on empty outputs",
         "Both outputs were empty for a non-empty input: the relation held without judging anything.",
         "Check that the subject returns something for the relation's input; if empty outputs are right, mark "
         "the relation `empty_ok: true`.", None, ("catalog", None)),
    Rule("drawn_incomplete", RELATION, "Drawn inputs were not all judged",
         "The relation held on its own input, but the inputs drawn after it were not all judged: the "
         "relation's time ran out (a subject that slows down on drawn inputs), or one could not be judged "
         "(the oracle's or the machine's fault). Unjudged inputs are no pass, so the relation holds.",
         "Lower the relation's `generate: N` or raise `[tool.relconsole] relation_timeout_seconds`; if the "
         "subject is slow only on drawn inputs, that is what to review.", None, ("catalog", "drawn-inputs")),
    Rule("replays_disagree", RELATION, "A candidate's second replay disagreed with its first",
         "A drafted candidate gave another result on its second replay than on its first: it is not stable "
         "enough to judge a patch by.",
         "Delete the candidate (`relconsole delete`), or make it deterministic and propose it again.", None,
         ("quarantine", None)),
    Rule("not_run", RELATION, "A touched relation has not run",
         "The patch touches a path this relation owns, but no run of it was recorded (an interrupted run).",
         "Run the gate again to the end.", None, ("judge", None)),
    Rule("lease_not_usable", RELATION, "The relation's leased input cannot be read",
         "The dataset lease the relation reads is missing, expired, drifted or does not allow this relation: the "
         "run failed closed.",
         "The lease's owner renews, re-pins or widens the lease (`relconsole lease status` says which).", None,
         ("leases", None)),
    Rule("bad_seeds", RELATION, "The relation's seeds file cannot be read",
         "The relation's seeds file is missing or is not one JSON value a line: the run failed closed.",
         "Fix the seeds file in a `catalog:` commit on the base branch (`relconsole validate` names the line).",
         None, ("catalog", None)),
    Rule("frozen_pass", RELATION, "Passed under a counted freeze",
         "The relation missed, but a live freeze tolerates its intermittent miss and enough reruns held.",
         "Nothing for this patch. The freeze expires on its date; after that the miss rejects.", 8,
         ("freezes", None)),
    Rule(RUN_ERROR, RELATION, "The relation's run failed",
         "The run could not compare outputs: the subject raised, ran out of time, or its process died. The "
         "message names the error (its type is the result's reason) and where it was raised.",
         "Read the error. An exception raised in the patch's code is the patch's to fix; a timeout may be a "
         "loop the patch made endless.", None, ("judge", None)),
    # review flags ------------------------------------------------------------------------------
    Rule("protected_path_changed", FLAG, "The patch changes a protected oracle path",
         "The relations still judge the patch with the base's oracle, but merging brings the change.", ACK, None,
         ("commits", "review-flags")),
    Rule("lease_hash_edited", FLAG, "The patch changes a lease's pin",
         "A lease's `sha256` changed or its `path` points elsewhere: the corpus the relations read would change "
         "with the code they judge.", ACK, None, ("commits", "review-flags")),
    Rule("leased_corpus_edited", FLAG, "The patch changes a leased corpus",
         "A corpus a lease pins changed in the same patch as the code it judges.", ACK, None,
         ("commits", "review-flags")),
    Rule("freeze_row_added", FLAG, "The patch adds a freeze row",
         "A freeze tolerates a relation's miss: added by the patch, it would excuse the patch's own miss.", ACK,
         None, ("commits", "review-flags")),
    Rule("freeze_row_edited", FLAG, "The patch changes a freeze row",
         "The freeze of a relation changed (its expiry, its reruns, its reason) in the patch it would judge.", ACK,
         None, ("commits", "review-flags")),
    Rule("golden_literal", FLAG, "A test asserts a call's result against a literal",
         "A test compares a result of code a relation owns with a written-down value. Kind `moved`: an "
         "assertion the test already made, given another expected value in a patch that changes code (the test "
         "was made to agree with the code). Kind `added`: a new one, such as a bug fix's regression test.",
         ACK, None, ("commits", "review-flags")),
    Rule("bag_output_sorted", FLAG, "The patch sorts what a bag-compared subject returns",
         "A sort of the returned value was added to the subject of a relation that compares outputs as bags: "
         "it can hide an order the callers rely on.", ACK, None, ("commits", "review-flags")),
    Rule("ingest_replay_to_concat", FLAG, "A replayed ingest became one ingest",
         "A test that ingested twice now ingests concatenated rows once, or a `replay_ingest` relation became "
         "another kind: replaying an ingest is no longer tested.", ACK, None, ("commits", "review-flags")),
    Rule("oracle_layout_changed", FLAG, "The patch changes `[tool.relconsole]`",
         "The review settings in `pyproject.toml` changed (the gate always uses the base's).", ACK, None,
         ("commits", "review-flags")),
    Rule("relation_changed", FLAG, "The patch changes a relation",
         "A relation's identity changed: its catalog row or a callable it names in the protected tree.", ACK,
         None, ("commits", "review-flags")),
    Rule("patch_catalog_invalid", FLAG, "The patch leaves a catalog that does not load",
         "At HEAD the catalog does not parse or validate; merged, every later review would stop on it.", ACK,
         None, ("commits", "review-flags")),
    Rule("environment_probe", FLAG, "Code looks at the process around it",
         "Code that is not a test reads its environment, the clock, files or the machine, its caller, random "
         "draws or a cache, or runs code by a computed name: it can behave differently while judged than in "
         "production.", ACK, None, ("commits", "review-flags")),
    Rule("source_rewritten", FLAG, "The checkout can differ from the committed text",
         "A `.gitattributes`, a symlink or a Python coding cookie makes the files a checkout gives differ from "
         "the committed text the relations judged.", ACK, None, ("commits", "review-flags")),
    Rule("test_harness_changed", FLAG, "The patch changes what pytest loads",
         "A `conftest.py`, `pytest.ini` or the pytest options that load code changed: code there runs inside "
         "the pytest process and can switch `pytest --relconsole` off.", ACK, None, ("commits", "review-flags")),
    Rule("packaging_changed", FLAG, "The patch changes what is built, shipped or loaded",
         "A packaging setting changed (`pyproject.toml`, `setup.cfg`, `setup.py`, `MANIFEST.in`), compared as "
         "parsed data, or a `.pth` file was added. These files are exempt from coverage, yet they decide what "
         "the package ships and runs. Kind `layout`: where the shipped code comes from (package folders, "
         "`package-dir`, `force-include`, `sources`, include lists, data files, `.pth`): a wheel can ship a copy "
         "of the package that no relation judged. Kind `entry_points`: scripts and entry points (a `pytest11` "
         "entry point is a plugin pytest loads in every run). Kind `build`: the build backend, `backend-path`, "
         "build hooks, `cmdclass`, the code a `setup.py` runs, version sources and dynamic metadata "
         "(`[tool.hatch.version]`, `[tool.pdm.version]`, `[tool.setuptools.dynamic]`, setuptools_scm commands "
         "and written files): they run or import code at build time. Kind `dependency_source`: a requirement "
         "from a URL, a path or another index. Kind `dependencies`: requirements and `requires-python` (warns). "
         "A requirements or entry-points file that the metadata reads (`dynamic` `file = [...]`, `file:` in "
         "`setup.cfg`) is read as those requirements or entry points; one that no metadata names is not. The "
         "message names the setting and its new value: check that the package still ships its own judged code "
         "from its usual folder. An acknowledgement clears that value at that line, not the line.",
         ACK, None, ("commits", "review-flags")),
    Rule(REVIEW_FLAG, FLAG, "A review flag",
         "The patch changed something the review protects or restates.", ACK, None, ("commits", "review-flags")),
    # the patch as a whole ----------------------------------------------------------------------
    Rule("coverage_gap", PATCH, "A touched path no catalog pattern owns",
         "No relation judges this path and no exempt entry says none needs to (exit 2 when nothing is worse).",
         "Add an owner pattern naming the relations that judge it, or an exempt `[]` entry, to "
         "`oracle/catalog.yaml` in a `catalog:` commit.", None, ("catalog", None)),
    Rule("unexercised", PATCH, "A changed statement no relation ran",
         "The file is owned, but no relation's calls executed this changed statement on HEAD, so nothing judged "
         "it (exit 2 unless `[tool.relconsole] unexercised = \"warn\"`).",
         "Add a relation, or seed rows, whose calls run the statement; remove it if it is dead code.", None,
         ("catalog", None)),
    Rule("commit_split", PATCH, "A commit mixes oracle files with other files",
         "Oracle changes go in commits of their own kind (`catalog:`, `lease:`, `freeze:` …), never with code, so "
         "that each is reviewed as what it is.",
         "Split the commit (`git rebase -i`, then `edit` and two commits).", None, ("commits", None)),
    Rule("bad_input", PATCH, "An oracle or gate file does not parse or validate",
         "A file the gate reads is malformed (exit 5): nothing was judged.",
         "Fix the file at the line given; `relconsole validate` checks every oracle file.", None,
         ("catalog", None)),
    Rule("lease_warning", PATCH, "A dataset lease is expired or expiring",
         "A lease the oracle reads is past, or near, its expiry.",
         "The lease's owner renews it (`relconsole lease renew <lease> --until YYYY-MM-DD`).", None,
         ("leases", None)),
    # the merge checklist -----------------------------------------------------------------------
    Rule("checklist:leases_fresh", CHECKLIST, "A lease a touched relation reads is not fresh",
         "A lease does not match its hash, or has expired.",
         "The lease's owner renews or re-pins it (`relconsole lease renew`, `relconsole lease rehash`).", None,
         ("leases", None)),
    Rule("checklist:leases_allow", CHECKLIST, "A lease does not allow a relation that reads it",
         "A touched relation reads a lease whose terms do not list it.",
         "The lease's owner allows the relation in a `lease:` commit, or the relation reads another input.",
         None, ("leases", None)),
    Rule("checklist:no_golden_literal", CHECKLIST, "The patch adds a golden literal that blocks",
         "A test asserts a call's result against a written-down value (see `golden_literal`).",
         "Check a property instead of a value, or acknowledge the `golden_literal` flag by its id.", None,
         ("commits", "review-flags")),
    Rule("checklist:freezes_preexisting", CHECKLIST, "A freeze in use is not the base's",
         "A freeze row in use was not on the base before the patch, or has no reason.",
         "Freezes are committed on the base branch with a reason (`relconsole freeze`), never by the patch.",
         None, ("freezes", None)),
    Rule("checklist:freeze_reruns_counted", CHECKLIST, "A freeze's reruns were not counted",
         "A freeze in use did not have its reruns executed and counted.", "Run the gate again to the end.", None,
         ("freezes", None)),
    Rule("checklist:drafted_rows_decided", CHECKLIST, "A drafted row was not decided by a person",
         "An accepted drafted row or candidate was accepted by its drafter, not by a person.",
         "A person reviews and accepts drafted rows (`relconsole accept`).", None, ("quarantine", None)),
    Rule(CHECKLIST_ITEM, CHECKLIST, "A merge checklist item failed",
         "An item of the merge checklist failed; its evidence is in the message.",
         "Read the evidence and fix what it names.", None, ("commits", None)),
    # tool failures -----------------------------------------------------------------------------
    Rule("gate_failed", TOOL, "The gate could not finish",
         "A git error, an unreadable part or sheet, or a missing ref stopped the gate before it decided "
         "(exit 3, or 5 for an unreadable artifact).",
         "Read the message. Most often the checkout lacks history (`fetch-depth: 0`) or the base branch was not "
         "fetched. Fix the job and run it again.", None, ("ci", None)),
    Rule("replay_failed", TOOL, "A replay could not finish",
         "The replay of a missed relation stopped: the workspace lease was held elsewhere or lost, or the lease "
         "store could not be reached.",
         "Run the job again; check the lease store (`--lease-url`) and `relconsole workspace status`.", None,
         ("ci", None)),
    Rule("split_unchecked", TOOL, "The split check could not read the patch's commits",
         "merge base..HEAD could not be read, most often in a shallow clone.",
         "Fetch the full history (`actions/checkout` with `fetch-depth: 0`).", None, ("ci", None)),
    Rule("incomplete_evidence", TOOL, "Evidence the gate needs is missing",
         "A shard's part, a replay sheet or a manifest is missing, or was made for another commit or oracle.",
         "Check that every shard job ran and uploaded its artifacts for this commit, then collect again in the "
         "checkout of the commit under review.", None, ("ci", None)),
    Rule("environment", TOOL, "The runs judged the machine, not the patch",
         "A module the relation's subject imports is neither in the tree nor installed, on either side.",
         "Install what the subject imports in the CI job, then run it again.", None, ("ci", None)),
    Rule("missing_fields", TOOL, "A replay sheet lacks a required field",
         "The replay's evidence is incomplete; a sheet edited by hand is not evidence.",
         "Run the gate again.", 1, ("judge", None)),
    Rule("lease_not_fresh", TOOL, "The replay's workspace lease was not fresh",
         "Another replay took the workspace, or the lease expired during the replay.",
         "Run the job again; give slow replays a longer `--ttl-seconds`.", 2, ("ci", None)),
)

TOOL_IDS = frozenset(rid for rid, rule in RULES.items() if rule.group == TOOL)


def anchor(rule_id: str) -> str:
    """The anchor of ``rule_id``'s section in docs/rules.md: the id lowercased, ``.`` made ``-``."""
    return rule_id.lower().replace(".", "-")


def help_uri(rule_id: str) -> str:
    """The absolute URL of ``rule_id``'s section in docs/rules.md."""
    return doc_url("rules", anchor(rule_id))


def relation_rule(reason: str) -> str:
    """The rule of a relation decided with ``reason``: the reason itself when RULES knows it,
    else ``run_error`` (a run that failed with an exception type as its reason)."""
    return reason if reason in RULES and RULES[reason].group in (RELATION, TOOL) else RUN_ERROR


def flag_rule(name: str) -> str:
    """The rule of a review flag named ``name`` (``review_flag`` for a name RULES lacks)."""
    return name if name in RULES and RULES[name].group == FLAG else REVIEW_FLAG


def checklist_rule(key: str) -> str:
    """The rule of a failed checklist item ``key`` (``checklist`` for a key RULES lacks)."""
    rid = f"checklist:{key}"
    return rid if rid in RULES else CHECKLIST_ITEM


def row_text(row: int) -> str:
    """``decision table row 3 (URL)``: a decision table row named for text read off the
    repository (SARIF, annotations)."""
    return f"decision table row {row} ({doc_url('decision-table', f'row-{row}')})"


def row_link(row: int, relative: bool = False) -> str:
    """``[decision table row 3](URL)``: the same as a Markdown link (``relative``: from a page
    of docs/, as docs/rules.md links)."""
    return _md_link(f"decision table row {row}", "decision-table", f"row-{row}", relative)


def _md_link(text: str, page: str, anchor_name: str | None, relative: bool) -> str:
    target = doc_path(page, anchor_name).removeprefix("docs/") if relative else doc_url(page, anchor_name)
    return f"[{text}]({target})"


def _more(rule: Rule, markdown: bool, relative: bool = False) -> list[str]:
    """The rule's decision table row and docs page, as sentences."""
    out = []
    if rule.row is not None:
        out.append(f"This is {row_link(rule.row, relative) if markdown else row_text(rule.row)}.")
    if rule.see is not None:
        page, anchor_name = rule.see
        name = doc_path(page, anchor_name).removeprefix("docs/")
        out.append(f"More: {_md_link(name, page, anchor_name, relative) if markdown else doc_url(page, anchor_name)}.")
    return out


def help_text(rule_id: str) -> str:
    """``rule_id``'s help as plain text: what it means, what to do, the row and a docs URL."""
    rule = RULES[rule_id]
    return " ".join([f"{rule.title}.", rule.means, f"What to do: {rule.does}", *_more(rule, False)])


def help_markdown(rule_id: str, level: int = 0, relative: bool = False) -> str:
    """``rule_id``'s help as Markdown: the title in bold (or, with ``level``, a heading of that
    level), what it means, what to do, the row and docs links (absolute URLs; ``relative``:
    from a page of docs/)."""
    rule = RULES[rule_id]
    head = f"{'#' * level} `{rule.id}`: {rule.title}" if level else f"**{rule.title}**"
    return "\n\n".join([head, rule.means, f"**What to do:** {rule.does}", *_more(rule, True, relative)]) + "\n"


def rules_markdown() -> str:
    """docs/rules.md: one section per rule id, grouped, each under ``<a id="ANCHOR"></a>``."""
    lines = ["# What the gate reports, rule by rule", "",
             "Each result of `relconsole gate --sarif` (code scanning), each `--format github` annotation and each "
             "row of the job summary names one of these rules. A rule's help in SARIF links to its section here.",
             "",
             "<!-- Generated from relconsole/engine/gate/rulehelp.py: "
             "python -m relconsole.engine.gate.rulehelp > docs/rules.md -->", ""]
    for group, heading in GROUPS.items():
        lines += [f"## {heading}", ""]
        for rule in (r for r in RULES.values() if r.group == group):
            lines += [f'<a id="{anchor(rule.id)}"></a>', "", help_markdown(rule.id, level=3, relative=True)]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(rules_markdown())
