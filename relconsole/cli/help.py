"""What ``relconsole [COMMAND] --help`` says: each command's description and the exit codes
(SPEC §8) it can return, with what each one means for that command.

``HELP`` maps a command path (``"bind"``, ``"lease renew"``) to ``(description, {code: meaning})``.
``apply(parser)`` walks the built parser and sets every subparser's ``description``, an
``epilog`` listing its exit codes and a formatter that keeps those lists as written. A
command with no entry gets its one-line help and the generic §8 list, so the CLI still
works; ``tests/test_cli_help.py`` fails for it, so whoever adds a command writes its text.

Nothing here reads a repository or imports the engine beyond its exit-code constants: it
runs at every start of the CLI.
"""

from __future__ import annotations

import argparse
import re

from relconsole.engine.docsref import decision_row, doc_path
from relconsole.engine.errors import (EXIT_ABORT, EXIT_BAD_INPUT, EXIT_GAP, EXIT_HOLD, EXIT_PASS,
                                      EXIT_REJECT, EXIT_USAGE)

SPEC_CODES = {EXIT_PASS: "pass or freeze", EXIT_REJECT: "reject", EXIT_GAP: "coverage gap",
              EXIT_ABORT: "abort", EXIT_HOLD: "hold", EXIT_BAD_INPUT: "bad input file (the message names file and line)",
              EXIT_USAGE: "usage error"}
"""Every exit code §8 defines and its one-word name: the generic list, and the only codes a
command's list may name."""

_GIT = "git cannot answer (unknown ref, no merge base, a shallow clone)"
_BAD_ORACLE = "an oracle file (catalog, lease, freeze, quarantine) is malformed: the message names file and line"
_USAGE = "usage error: a bad option, an unknown id, or a request that cannot be honoured as asked"
_COMMIT_REFUSED = ("usage error: an unknown id, or the commit was refused (another owner, the relation's "
                   "policy, no git identity, a path changed since loading); nothing is committed")

HELP: dict[str, tuple[str, dict[int, str]]] = {
    "review": (
        "Open the review console (a full-screen terminal UI) on a patch: the paths it touches and "
        "who owns them, the relations they run, misses, review flags, leases and quarantined "
        "candidates. Its keys make the same commits as accept, delete, freeze, ack and lease renew.",
        {EXIT_PASS: "you quit and the patch's decision is pass or freeze",
         EXIT_REJECT: "you quit and the decision is reject (a missed relation, an open review flag, a mixed commit)",
         EXIT_GAP: "you quit and a touched path has no owner (coverage gap)",
         EXIT_ABORT: "the review could not load or its decision is abort (" + _GIT + ", a stale lease)",
         EXIT_HOLD: "you quit with the decision on hold (a touched relation has not run yet)",
         EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: _USAGE}),
    "demo": (
        "Build the sample repository (a small project with an oracle and an AI-written patch) in a "
        "new directory and open the review console on it; quitting removes a temporary sample unless "
        "--keep (an --into directory stays); --no-open only builds it and prints its path.",
        {EXIT_PASS: "the sample was built (and, with the console, you quit on a passing decision)",
         EXIT_REJECT: "the console closed on a reject decision",
         EXIT_GAP: "the console closed on a coverage gap",
         EXIT_ABORT: "git failed while building the sample, or the console closed on an abort",
         EXIT_HOLD: "the console closed with relations not yet run",
         EXIT_BAD_INPUT: "the shipped sample project is incomplete",
         EXIT_USAGE: "--into names a non-empty directory, or no sample project ships with this install"}),
    "screenshots": (
        "Regenerate the screenshots the README and the docs show (screenshots/*.svg) by driving the "
        "console over the sample repository; prints each file written.",
        {EXIT_PASS: "every screenshot was written", EXIT_ABORT: "git failed while building the sample",
         EXIT_USAGE: _USAGE}),
    "bind": (
        "List every path the patch touches with its owner pattern and the relations that guard it "
        "(following imports). Reads what binding needs (the catalog, leases, pyproject's layout), "
        "not the quarantine or the review flags (validate and flags do). Commits nothing.",
        {EXIT_PASS: "every touched path has an owner",
         EXIT_GAP: "coverage gap: a touched path no owner pattern matches",
         EXIT_ABORT: _GIT, EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: _USAGE}),
    "run": (
        "Run the relations the patch touches (or --all, --relation ID, one --shard K/N) against the "
        "subject, rerunning a miss as the freeze protocol counts, and print each verdict and the "
        "patch's decision. Commits nothing.",
        {EXIT_PASS: "every relation held (or a miss is covered by a fresh freeze)",
         EXIT_REJECT: "a relation missed, or an open review flag, a failed checklist item or a mixed commit rejects the patch",
         EXIT_GAP: "the relations passed but a touched path has no owner (only without --relation/--shard/--all)",
         EXIT_ABORT: "a relation could not be judged (stale lease, a subject that would not start) or " + _GIT,
         EXIT_HOLD: "a relation's output was vacuous, or a touched relation did not run",
         EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: _USAGE}),
    "flags": (
        "Print the patch's review flags (golden-value asserts, an added sort on a bag output, "
        "edited leases or freezes, protected paths) and the merge checklist, and the decision they "
        "make; --run runs the touched relations first. Commits nothing. See "
        + doc_path("commits", "review-flags") + ".",
        {EXIT_PASS: "no open flag, every checklist item passes, every touched path owned",
         EXIT_REJECT: "an unacknowledged review flag, a failed checklist item, a commit that breaks the split, or a missed relation",
         EXIT_GAP: "nothing worse, but a touched path has no owner",
         EXIT_ABORT: "a relation could not be judged, or " + _GIT,
         EXIT_HOLD: "touched relations have not run (give --run)",
         EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: _USAGE}),
    "validate": (
        "Check every oracle file (catalog, leases, freezes, seeds, quarantined candidates) and print "
        "each candidate's and drafted seed row's verdict, with warnings for relations no owner pattern names. "
        "Then resolve every subject on the base and run every relation once there (the base tip with "
        "its oracle, in the judge's worker processes; a miss is rerun twice on new seeds): a relation "
        "that misses every run, is vacuous or cannot be compared is a bad input file at its catalog line, "
        "with the seed row (or corpus) and both values, since every patch would be blamed for it; one "
        "that misses on some runs only is a warning, one its lease keeps from running a note. "
        "--static reads the files only: no subject is resolved and no relation runs.",
        {EXIT_PASS: "every file is valid and every relation holds on the base (warnings do not fail)",
         EXIT_ABORT: _GIT + "; or a relation could not be judged here (a module neither in the tree nor installed)",
         EXIT_BAD_INPUT: _BAD_ORACLE + "; or a relation's subject does not resolve, or a relation misses "
                         "on the base every run, is vacuous or cannot be compared", EXIT_USAGE: _USAGE}),
    "bite": (
        "Mutate the relation's subject function one change at a time and run the relation on each "
        "mutant: does it catch them? A relation that catches nothing guards nothing.",
        {EXIT_PASS: "the relation's comparison caught a mutant",
         EXIT_REJECT: "it caught none, or only by crashes",
         EXIT_ABORT: "it cannot be judged: blocked, or it already misses unmutated",
         EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: "no such relation, or a bad option"}),
    "replay": (
        "Replay the relations that missed, several runs on the patch and on the merge base, in "
        "worktrees under a workspace lease, and write one replay sheet per relation for decide. "
        "--shard K/N takes one slice (a CI matrix). See " + doc_path("judge", "replay") + ".",
        {EXIT_PASS: "every replayed relation passes, or its miss shows on the base too (freeze)",
         EXIT_REJECT: "a miss the base does not show, or a fixture pin changed",
         EXIT_ABORT: "the workspace lease is held by another holder or was lost, a dataset lease is not fresh, or " + _GIT,
         EXIT_HOLD: "a sheet needs a second replay (a quarantined predicate)",
         EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: _USAGE}),
    "init": (
        "Write a repository's first oracle (catalog, leases for --corpus files, drafted candidates "
        "for --subject functions into quarantine) as one 'oracle: init' commit on the base branch.",
        {EXIT_PASS: "the init commit was made", EXIT_ABORT: _GIT + ", or the repository has no commits yet",
         EXIT_USAGE: "the branch has an oracle already, HEAD is detached, a corpus is not committed, "
                     "a subject is not found, or no git identity"}),
    "accept": (
        "Accept quarantined candidate relations (into the catalog) or drafted seed rows (into the "
        "seeds file): one 'catalog:' commit on the oracle branch. Before it is written, the relations "
        "it adds or changes run on the tree it would have (the branch tip with the accepted rows): one "
        "that misses there refuses the commit.",
        {EXIT_PASS: "the catalog: commit was made",
         EXIT_ABORT: "a relation it adds or changes could not be judged here (a module not installed); "
                     "nothing committed",
         EXIT_BAD_INPUT: _BAD_ORACLE,
         EXIT_USAGE: "an unknown id, or refused: a rejected or unconfirmed candidate (see "
                     "--override-unconfirmed), a relation that would miss on the commit (its seed row and "
                     "both values are named), a changed file, no git identity; nothing committed"}),
    "delete": (
        "Delete quarantined candidates or drafted seed rows: one 'quarantine:' commit on the oracle branch.",
        {EXIT_PASS: "the quarantine: commit was made", EXIT_BAD_INPUT: _BAD_ORACLE,
         EXIT_USAGE: _COMMIT_REFUSED}),
    "freeze": (
        "Run a missed relation, then commit a freeze row for it (reason, expiry, signature): one "
        "'freeze:' commit. The decision table decides: a replay sheet saying freeze (" + decision_row(8) + ") "
        "is needed unless --without-replay, which the commit records. See " + doc_path("freezes") + ".",
        {EXIT_PASS: "the freeze: commit was made", EXIT_ABORT: _GIT, EXIT_BAD_INPUT: _BAD_ORACLE,
         EXIT_USAGE: "an unknown relation, no miss to freeze, no replay sheet saying freeze, a policy "
                     "that forbids it or a too-late expiry; nothing committed"}),
    "ack": (
        "Acknowledge a review flag you have read, with a reason: one 'review:' commit to "
        "oracle/acks.json. An acknowledged flag no longer rejects the patch; the patch's author cannot ack. "
        "See " + doc_path("commits", "acks") + ".",
        {EXIT_PASS: "the review: commit was made", EXIT_ABORT: _GIT, EXIT_BAD_INPUT: _BAD_ORACLE,
         EXIT_USAGE: "no such flag id (or an ambiguous prefix), no reason, or you wrote a commit under review"}),
    "lease": (
        "Dataset leases: the pinned corpora relations read. status and history only read; renew and "
        "rehash each make one 'lease:' commit for a lease you own.",
        {EXIT_PASS: "the action succeeded", EXIT_REJECT: "rehash was refused",
         EXIT_ABORT: _GIT, EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: _USAGE}),
    "lease renew": (
        "Move a lease's expiry to --until: one 'lease:' commit touching only its manifest. Only the "
        "lease's owner may renew, within the maximum term.",
        {EXIT_PASS: "the lease: commit was made", EXIT_ABORT: _GIT, EXIT_BAD_INPUT: _BAD_ORACLE,
         EXIT_USAGE: "an unknown lease, or refused: not the owner, a date not after today or past "
                     "the maximum term; nothing committed"}),
    "lease status": (
        "Print every dataset lease's state (fresh, expiring, expired, drifted, missing) and why. Commits nothing.",
        {EXIT_PASS: "the states were printed (an expired lease does not fail this command)",
         EXIT_ABORT: _GIT, EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: _USAGE}),
    "lease history": (
        "Print every commit on the oracle branch that changed a lease's manifest, newest first: who, "
        "when, and the expiry and digest before and after. Commits nothing.",
        {EXIT_PASS: "the history was printed (possibly empty)", EXIT_ABORT: _GIT, EXIT_USAGE: _USAGE}),
    "lease rehash": (
        "Re-pin a drifted lease you own to its committed corpus. Without --confirm it shows the old "
        "and new digests and changes nothing; with --confirm NEW_DIGEST it makes one 'lease:' commit.",
        {EXIT_PASS: "the lease: commit was made",
         EXIT_REJECT: "refused: not the owner, nothing drifted, a digest that does not match, or the branch moved",
         EXIT_ABORT: _GIT, EXIT_BAD_INPUT: _BAD_ORACLE,
         EXIT_USAGE: "the preview only: run again with --confirm and the new digest; or an unknown lease"}),
    "propose": (
        "Ask a model (the --drafter command) to draft candidate relations or --seeds rows for the "
        "patch; what validates is committed into quarantine (one 'quarantine:' commit) for a human "
        "to accept or delete. --print-prompt shows the prompt and runs nothing. See "
        + doc_path("quarantine", "drafting-with-a-model") + ".",
        {EXIT_PASS: "every drafted item validated and was committed (or the prompt was printed)",
         EXIT_REJECT: "at least one drafted item was rejected (the valid ones are still committed)",
         EXIT_ABORT: "the drafter failed (not found, timed out, non-zero exit, no YAML); nothing committed",
         EXIT_BAD_INPUT: "a bad ticket file, a malformed oracle file, or a symlinked quarantine",
         EXIT_USAGE: "no --drafter, an unknown --seeds relation, no local oracle branch, or "
                     "uncommitted work on a drafted path"}),
    "confirm": (
        "Second replay of a quarantined candidate relation (on the patch and the base): confirmed, "
        "it may be accepted; if the two replays disagree it is discarded with one 'quarantine:' commit. "
        "See " + doc_path("quarantine", "the-second-replay") + ".",
        {EXIT_PASS: "the candidate is confirmed",
         EXIT_REJECT: "the replays disagree: the candidate was discarded; or they agree but it misses on "
                      "the base: not confirmed, fix it",
         EXIT_ABORT: "another holder has the workspace lease, or it was lost",
         EXIT_HOLD: "--first-only: the first replay is recorded, the second is still required; or the "
                    "base lacks its subject (code the patch adds): accept it once the patch has merged",
         EXIT_BAD_INPUT: _BAD_ORACLE, EXIT_USAGE: "an unknown or rejected candidate, or a bad option"}),
    "check-split": (
        "Check that every commit in BASE..HEAD (or, with --staged, the commit being made) keeps the "
        "commit discipline: a protected oracle path is never mixed with other paths, nor two kinds "
        "of oracle change in one commit. In a range, each commit that changes the catalog or a seeds "
        "file also has the relations it adds or changes run on its own tree: one that misses there "
        "every run is an offence (a range with no such commit runs nothing). --staged checks paths "
        "only, and runs no relation. --hook (the pre-commit hook) checks what pre-commit gives it: "
        "the range of --from-ref/--to-ref or a push, the commit being made inside git commit, else "
        "(pre-commit run --all-files) every commit of the branch since its merge base with the base "
        "ref and the staged paths; paths only, as --static. For CI and the pre-commit hook. See "
        + doc_path("commits", "the-split-check") + ".",
        {EXIT_PASS: "every commit keeps the discipline (the range and the number of commits checked are printed)",
         EXIT_REJECT: "a commit mixes paths or kinds, or a relation misses on its own commit: one line per "
                      "commit and path",
         EXIT_ABORT: _GIT + "; fetch full history (fetch-depth: 0) in CI",
         EXIT_BAD_INPUT: "pyproject.toml is not UTF-8 text",
         EXIT_USAGE: "give exactly one of a BASE..HEAD range, --staged or --hook"}),
    "decide": (
        "Apply the decision table (" + doc_path("decision-table") + ") to replay sheets (a file, or a "
        "directory of shards' sheets): one decision per relation and one overall, written to "
        "decision.json and to the gate history.",
        {EXIT_PASS: "pass, or freeze (an intermittent miss the base shows too)",
         EXIT_REJECT: "a property failed, a fixture drifted, or a miss the base does not show",
         EXIT_ABORT: "a sheet lacks a required field, a lease is not fresh, a shard's sheet is missing, "
                     "or a sheet's workspace lease was lost",
         EXIT_HOLD: "a quarantined predicate needs a second replay",
         EXIT_BAD_INPUT: "a sheet is not readable JSON",
         EXIT_USAGE: "a bad --lease-url or --repo, or a bad option"}),
    "stats": (
        "Gate health over the last --days: how often each row of the decision table ("
        + doc_path("decision-table") + ") fired in this repository's recorded decisions, with "
        "warnings. Commits nothing.",
        {EXIT_PASS: "the figures were printed (warnings do not fail)",
         EXIT_USAGE: "--repo is not a git repository, or a bad --days"}),
    "workspace": (
        "Workspace leases: the lock that keeps two replays from sharing one set of worktrees. "
        "acquire, renew and release change a lease; status reads it.",
        {EXIT_PASS: "the action succeeded", EXIT_ABORT: "another holder has the workspace, or the store cannot be read",
         EXIT_USAGE: _USAGE}),
    "workspace acquire": (
        "Take the workspace lease for --holder for --ttl-seconds; fails while someone else holds it.",
        {EXIT_PASS: "acquired (the generation is printed)",
         EXIT_ABORT: "another holder has the workspace, or the store cannot be reached",
         EXIT_USAGE: "a bad --lease-url, or not inside a git repository without one"}),
    "workspace renew": (
        "Extend a workspace lease you hold by --ttl-seconds.",
        {EXIT_PASS: "renewed", EXIT_ABORT: "you do not hold it (expired, or taken), or the store cannot be reached",
         EXIT_USAGE: "a bad --lease-url, or not inside a git repository without one"}),
    "workspace release": (
        "Give up a workspace lease you hold, so the next replay need not wait for it to expire.",
        {EXIT_PASS: "released", EXIT_ABORT: "you do not hold it, or the store cannot be reached",
         EXIT_USAGE: "a bad --lease-url, or not inside a git repository without one"}),
    "workspace status": (
        "Print a workspace lease's state (fresh, stale or missing), holder, time left and generation.",
        {EXIT_PASS: "the state was printed, whatever it is",
         EXIT_ABORT: "the store cannot be read",
         EXIT_USAGE: "a bad --lease-url, or not inside a git repository without one"}),
    "completion": (
        "Print the shell completion script for bash, zsh or fish; " + doc_path("cli", "shell-completion")
        + " says where to put it. "
        "Completion runs relconsole itself on each TAB (argcomplete), so it always knows the installed commands.",
        {EXIT_PASS: "the script was printed", EXIT_USAGE: "an unknown shell"}),
    "gate": (
        "The one CI command: bind, check-split over the merge base..HEAD, review flags and the merge "
        "checklist, run, replay of what missed, and decide, giving one decision and one exit code "
        "(the worst of all) in decision.json. --shard K/N runs one part; --collect DIR merges the "
        "shards' results (a missing shard aborts). --sarif and --summary write what code scanning "
        "and a job summary read; --format github prints annotations a pull request shows on its diff.",
        {EXIT_PASS: "pass, or freeze",
         EXIT_REJECT: "a miss, an open review flag, a failed checklist item, or a commit that breaks the split",
         EXIT_GAP: "nothing worse, but a touched path has no owner",
         EXIT_ABORT: "missing evidence (a shard not collected, a stale lease, a lost workspace lease) or " + _GIT,
         EXIT_HOLD: "a replay needs a second run",
         EXIT_BAD_INPUT: _BAD_ORACLE,
         EXIT_USAGE: _USAGE}),
    "schema": (
        "Print the JSON Schema (Draft 2020-12) of one oracle file kind (catalog, lease, freeze, pin, "
        "candidate, ack), for an editor; the validator uses the same files.",
        {EXIT_PASS: "the schema was printed", EXIT_USAGE: "an unknown schema name"}),
}

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("console", ("review", "demo", "screenshots")),
    ("review a patch (commits nothing)", ("bind", "run", "flags", "validate", "bite", "replay")),
    ("oracle changes (each one git commit of one kind)",
     ("init", "accept", "delete", "freeze", "ack", "lease", "propose", "confirm")),
    ("CI", ("gate", "check-split", "decide", "stats", "workspace")),
    ("shell and editors", ("completion", "schema")),
)
"""The top-level help's command list; a command in no group is listed under "other"."""

INTRO = ("Review AI-written patches with metamorphic relations. The console (review, demo) shows "
         "a patch's evidence; each command below is a command-line twin of part of it, or a step for CI. "
         "relconsole COMMAND --help describes a command and the exit codes it returns; the guides are "
         "in " + doc_path("index") + " of relconsole's repository.")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the line breaks of a description and its lists, wraps prose paragraphs to the
    terminal's width, and gives a list line (``  TERM  text``) a hanging indent. The top-level
    parser's command list is in its description, so the subcommand action lists no choices."""

    LIST_LINE = r"^(\s+\S+\s{2,})(\S.*)$"  # compiled on first help, not at every start

    def _split_lines(self, text, width):
        import textwrap  # an option's help: a docs path (docs/decision-table.md) never breaks at its hyphen
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        import textwrap
        out = []
        for paragraph in text.split("\n\n"):
            lines = paragraph.split("\n")
            if not lines[0].startswith(" ") and len(lines) == 1:
                out.append(textwrap.fill(paragraph, width, initial_indent=indent, subsequent_indent=indent,
                                         break_on_hyphens=False))
                continue
            out.append("\n".join(self._list_line(line, width, indent) for line in lines))
        return "\n\n".join(out)

    def _list_line(self, line: str, width: int, indent: str) -> str:
        import textwrap
        match = re.match(self.LIST_LINE, line)
        if match is None or len(indent + line) <= width:
            return indent + line
        head = indent + match.group(1)
        return textwrap.fill(match.group(2), max(width, len(head) + 20), initial_indent=head,
                             subsequent_indent=" " * len(head), break_on_hyphens=False)


class _TopFormatter(HelpFormatter):
    def _iter_indented_subactions(self, action):
        if isinstance(action, argparse._SubParsersAction):
            return iter(())  # listed, grouped, in the description
        return super()._iter_indented_subactions(action)


def subparsers(parser: argparse.ArgumentParser, prefix: str = ""):
    """Yield ``(command path, parser, one-line help)`` for every subcommand under ``parser``,
    nested ones included (``"lease renew"``), in the order they were added."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._get_subactions()}
        for name, sub in action.choices.items():
            path = f"{prefix} {name}".strip()
            yield path, sub, helps.get(name) or ""
            yield from subparsers(sub, path)


def exit_codes_epilog(codes: dict[int, str]) -> str:
    """The ``exit codes`` list of a help text: one line per code, in §8's order of codes."""
    width = max(len(str(code)) for code in codes) + 2
    return "exit codes:\n" + "\n".join(f"  {str(code).ljust(width)}{meaning}"
                                       for code, meaning in sorted(codes.items()))


def apply(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give ``parser`` (the built ``relconsole`` parser) and every subparser under it a
    description and an exit-code epilog from ``HELP``; a command without an entry keeps its
    one-line help as description and gets the generic §8 list. Returns ``parser``."""
    commands = []
    for path, sub, line in subparsers(parser):
        description, codes = HELP.get(path) or (line or f"relconsole {path}", SPEC_CODES)
        sub.description = description
        sub.epilog = exit_codes_epilog(codes)
        sub.formatter_class = HelpFormatter
        if " " not in path:
            commands.append((path, line))
    parser.description = INTRO + "\n\n" + _grouped(commands)
    parser.epilog = exit_codes_epilog(SPEC_CODES) + "\n\n(each command's --help lists the codes it returns)"
    parser.formatter_class = _TopFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.metavar = "COMMAND"
            action.help = "one of the commands above"
    return parser


def _grouped(commands: list[tuple[str, str]]) -> str:
    lines = dict(commands)
    width = max(len(name) for name in lines) + 2
    placed = {name for _, names in GROUPS for name in names}
    groups = [*GROUPS, ("other", tuple(name for name in lines if name not in placed))]
    blocks = []
    for title, names in groups:
        present = [name for name in names if name in lines]
        if present:
            blocks.append(f"{title}:\n" + "\n".join(f"  {name.ljust(width)}{lines[name]}" for name in present))
    return "\n\n".join(blocks)
