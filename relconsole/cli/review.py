"""CLI subcommands that review a patch from the shell and commit nothing: ``bind`` (touched
paths to their owners, SPEC §3), ``run`` (the touched relations under the counted freeze
protocol, §4, §6), ``replay`` (missed relations on HEAD and the merge base, written as §7
sheets, under a workspace lease, §5) and ``check-split`` (one kind per commit, §9). Exit codes
are §8's: 2 for a coverage gap, 5 for a bad oracle file, 1 for a miss or a commit that breaks
the split, 3 when a workspace lease is held or lost, 64 on misuse.
"""

from __future__ import annotations

import sys
from pathlib import Path

from relconsole.cli.options import directory, review_command, review_options, seed, shard, workspace_lease_options
from relconsole.cli.pipe import decided
from relconsole.cli.reviewio import decision_line, emit, errors_payload, load, warn_uncommitted
from relconsole.engine.errors import EXIT_BAD_INPUT, EXIT_GAP, EXIT_PASS, EXIT_REJECT, UsageError
from relconsole.engine.literal import counted, literal, one_line
from relconsole.engine.docsref import see


def register_bind(subparsers, commands: dict) -> None:
    """Add ``bind`` to ``subparsers`` and its handler to ``commands``."""
    review_command(subparsers, "bind", "map touched paths to owners (exit 2 on a gap)")
    commands["bind"] = cmd_bind


def register_run(subparsers, commands: dict) -> None:
    """Add ``run`` to ``subparsers`` and its handler to ``commands``."""
    run = review_command(subparsers, "run", "run the touched relations with the counted freeze protocol")
    run.add_argument("--all", action="store_true", help="run every relation, not only touched ones")
    run.add_argument("--replay-seed", type=seed, default=None, metavar="SEED",
                     help="replay a recorded run: every relation's first run uses this seed "
                          "(the 'seed' of a run record) instead of a new draw")
    run.add_argument("--replay-hashseed", type=seed, default=None, metavar="N",
                     help="with --replay-seed: the subject's PYTHONHASHSEED too (run.hashseed "
                          "of the record), for a subject whose output follows hash order")
    run.add_argument("--relation", action="append", default=None, help="run only this relation (repeatable)")
    run.add_argument("--shard", type=shard, default=None, metavar="K/N",
                     help="run only the K-th of N slices of the touched relations (a CI matrix)")
    commands["run"] = cmd_run


def register_replay(subparsers, commands: dict) -> None:
    """Add ``replay`` to ``subparsers`` and its handler to ``commands``."""
    replay_cmd = subparsers.add_parser("replay", help="replay missed relations on HEAD and the merge base (replay sheets)")
    review_options(replay_cmd)
    replay_cmd.add_argument("--runs", type=int, default=5, help="runs on each side (default: 5)")
    replay_cmd.add_argument("--shard", type=shard, default=None, metavar="K/N",
                            help="replay only the K-th of N slices of the touched relations")
    replay_cmd.add_argument("--artifacts", type=directory, default=None,
                            help="directory for the replay sheets (default: under the git directory)")
    workspace_lease_options(replay_cmd, "workspace lease id (default: host, repository, shard)")
    replay_cmd.add_argument("--fresh-worktrees", action="store_true",
                            help="add and remove new worktrees instead of reusing the pooled ones")
    replay_cmd.add_argument("--json", action="store_true", help="print JSON")
    commands["replay"] = cmd_replay


def register_check_split(subparsers, commands: dict) -> None:
    """Add ``check-split`` to ``subparsers`` and its handler to ``commands``."""
    split = subparsers.add_parser("check-split", help="fail when a commit mixes a protected path with others, or two kinds")
    split.add_argument("range", nargs="?", default=None, help="BASE..HEAD")
    split.add_argument("--staged", action="store_true", help="check the staged paths (the commit being made)")
    split.add_argument("--hook", action="store_true",
                       help="the pre-commit hook: the range pre-commit gives (--from-ref/--to-ref, pre-push), "
                            "the commit being made inside git commit, else the branch since its merge base "
                            "with the base ref and the staged paths (pre-commit run --all-files); "
                            "split rules only, as --static")
    split.add_argument("--base", default=None,
                       help="with --hook: the base ref whose merge base starts the branch (default: the "
                            "review's base ref)")
    split.add_argument("--repo", default=".", help="repository (default: .)")
    split.add_argument("--json", action="store_true", help="print JSON")
    split.add_argument("--static", action="store_true",
                       help="the split rules only: run no relation of the range's catalog commits")
    commands["check-split"] = cmd_check_split


def cmd_bind(args) -> int:
    from relconsole.engine.gate import bindfacts, exercisedrecord
    if bindfacts.enabled():  # an oracle commit bound before: its facts, without the full load
        known = bindfacts.bind_from_facts(args.repo, args.base, args.head, args.today, args.oracle_from)
        found = exercisedrecord.unexercised_from_record(known) if known is not None else None
        if found is not None:  # the lines the relations ran are on record too
            warn_uncommitted(known, "bind")
            return _print_bind(args, known, found)
    from relconsole.engine.gate import exercisedrun, importrun
    review = load(args, deferred=True)  # ownership needs no flags, quarantine or split check
    try:
        warn_uncommitted(review, "bind")
        bindfacts.save(review)
        if not review.errors:
            importrun.ensure(review)
            exercisedrun.ensure(review)  # which changed lines the relations ran on HEAD (§3)
        return _print_bind(args, review)
    finally:
        review.close()


def _print_bind(args, review, found=None) -> int:
    """Print ``bind``'s rows of ``review`` (a Review, or ``bindfacts``' answer: ``base_ref``,
    ``merge_base``, ``head_sha``, ``bindings``, ``errors``, with ``found``: its unexercised
    rows from the record); returns the §8 exit code. ``--json`` gives each owned ``.py`` path's
    added lines with the relations that ran each, or ``unexercised``, and its flags
    (``diffview.changed_line_marks``)."""
    from relconsole.engine.gate import diffview, exercised
    gaps = [b for b in review.bindings if b.state == "gap"]
    found = review.unexercised() if found is None else found
    level = review.layout.unexercised if hasattr(review, "layout") else "gap"
    code = EXIT_BAD_INPUT if review.errors else EXIT_GAP if gaps or (found and level == "gap") else EXIT_PASS
    if args.json:
        changed = set(exercised.review_changed(review)) if hasattr(review, "recorded") and not review.errors else set()
        paths = [{"status": b.touched.status, "path": b.path, "old_path": b.touched.old_path,
                  "state": b.state, "pattern": b.pattern, "relations": list(b.relations),
                  "via_import": list(b.via_import),
                  "lines": diffview.changed_line_marks(review, b.path, found) if b.path in changed else []}
                 for b in review.bindings]
        payload = {"base": review.base_ref, "merge_base": review.merge_base, "head": review.head_sha,
                   "paths": paths, "gaps": [b.path for b in gaps],
                   "unexercised": [u.to_json() for u in found], "unexercised_level": level,
                   "errors": [{"path": e.path, "line": e.line, "message": e.message} for e in review.errors]}
        emit(args, payload, [], review.errors, code)
        return code
    decided(code)
    if review.bindings:  # one write: 100,000 lines cost 0.6 s as a print and a literal() each
        print("\n".join(_binding_lines(review.bindings)))
    for line in unexercised_lines(found, level):
        print(line)
    emit(args, {}, [], review.errors)
    return code


def _binding_lines(bindings) -> list[str]:
    """``bind``'s text lines, ``STATUS  PATH  STATE[  RELATIONS][  (via import: ...)]``, each
    what ``literal`` makes of it: the path through ``one_line`` (its newlines and tabs shown as
    ``\\n`` and ``\\t``; a printable path has no character ``literal`` escapes, so it is
    its own ``one_line``), the rest through ``literal``, made once per (status, state,
    relations, via) (``literal`` works character by character: the parts' escapes are the
    line's)."""
    tails: dict = {}
    out = []
    append = out.append
    for b in bindings:
        key = (b.touched.status, b.state, b.relations, b.via_import)
        parts = tails.get(key)
        if parts is None:
            parts = tails[key] = (literal(b.touched.status + "  "), literal(
                "  " + b.state + (f"  {', '.join(b.relations)}" if b.relations else "")
                + (f"  (via import: {', '.join(b.via_import)})" if b.via_import else "")))
        path = b.touched.path
        append(parts[0] + (path if path.isprintable() else one_line(path)) + parts[1])
    return out


def cmd_run(args) -> int:
    from relconsole.engine.relations.pool import prestart
    prestart()  # the judge's processes boot while the run's modules import and the review loads
    from relconsole.engine.gate import importrun
    from relconsole.engine.gate.shrunkfacts import shrunk_facts, shrunk_lines
    from relconsole.engine.gate.report import miss_outputs, run_payload
    from relconsole.engine.gate.review import finish_review, load_review
    from relconsole.engine.gate.reviewrun import run_review
    from relconsole.cli.progress import progress_reporter
    with progress_reporter(sys.stderr, not args.json) as report:
        review = load_review(args.repo, args.base, args.head, args.today, args.oracle_from, deferred=True,
                             hash_progress=report.bytes)
    try:
        warn_uncommitted(review, "run")
        if review.errors:
            finish_review(review)  # every bad file in one report
            emit(args, {"errors": errors_payload(review)}, [], review.errors, EXIT_BAD_INPUT)
            return EXIT_BAD_INPUT
        ids = args.relation or ([r.id for r in review.relations] if args.all else None)
        if ids is None:
            importrun.ensure(review)  # ownership follows imports (§3)
        if args.shard is not None:
            ids = args.shard.select(ids if ids is not None else review.touched_relations())
        if args.replay_hashseed is not None and args.replay_seed is None:
            raise UsageError("--replay-hashseed replays a recorded run: give its --replay-seed too")
        # the flags, the quarantine and the patch's catalog are read while the workers judge
        with progress_reporter(sys.stderr, not args.json) as report:
            total = len(ids if ids is not None else review.touched_relations())
            results = run_review(review, ids, report.results(total), replay_seed=args.replay_seed,
                                 replay_hashseed=args.replay_hashseed, meanwhile=lambda: finish_review(review))
        if review.errors:  # a bad quarantine file, found while the relations ran
            emit(args, {"errors": errors_payload(review)}, [], review.errors, EXIT_BAD_INPUT)
            return EXIT_BAD_INPUT
        # the PR's decision, as gate, flags, the plugin and the console make it; --relation asks
        # only about the relations named
        judged = None if args.relation is None and args.shard is None and not args.all else ids
        decision = _worst_of(results) if args.relation else review.decision(judged)
        payload = run_payload(review, results, decision)
        lines = []
        for r in results:
            lines.append(f"{r.relation_id}: {r.verdict.decision.upper()}  {one_line(r.summary)}{drawn_words(r.first)}")
            outputs = miss_outputs(r) if r.verdict.decision != "pass" else None
            facts = shrunk_facts(r.first) if r.verdict.decision != "pass" else None
            if facts is not None:  # the smallest input that shows the miss first, then the whole input's
                lines += [one_line(line) for line in shrunk_lines(facts)]
            if outputs:
                on = f"on {facts.whole}: " if facts is not None else ""
                lines.append(f"    {on}outputs: source {one_line(outputs['source'])}  "
                             f"follow-up {one_line(outputs['followup'])}")
        lines += gap_lines(review)
        code = decision.exit_code if args.relation else review.exit_code(judged)  # a coverage gap is exit 2 (§8)
        lines.append(decision_line(decision.decision, decision.reason, code))
        emit(args, payload, lines, code=code)
        return code
    finally:
        review.close()


def drawn_words(record) -> str:
    """`` · 100 drawn inputs judged (4.2 s)`` for a first run that drew and held on them all, ""
    otherwise (a miss on one says so in its own lines)."""
    drawn = (record.drawn if record is not None else None) or {}
    if not drawn.get("tried") or drawn.get("missed_on") or not record.held:
        return ""
    return f" · {counted(int(drawn['tried']), 'drawn input')} held ({float(drawn.get('seconds') or 0):.1f} s)"


def gap_lines(review) -> list[str]:
    """One line per touched path no owner pattern matches (a coverage gap, exit 2), at most
    20 and a count of the rest: the exit code alone did not say which path (new-user trial);
    then one per file whose changed statements no relation ran (``unexercised``)."""
    gaps = [b.path for b in review.gaps()]
    lines = [f"gap: {one_line(path)} is owned by no catalog pattern (exit 2 unless worse)" for path in gaps[:20]]
    lines += [f"gap: … and {counted(len(gaps) - 20, 'more path')}"] if len(gaps) > 20 else []
    return lines + unexercised_lines(review.unexercised(), review.layout.unexercised)


def unexercised_lines(found, level: str) -> list[str]:
    """``unexercised:`` lines for ``exercised.Unexercised`` rows (at most 20, then a count)."""
    from relconsole.engine.gate.exercised import describe
    lines = [one_line(describe(u.to_json(), level)) for u in found[:20]]
    return lines + ([f"unexercised: … and {counted(len(found) - 20, 'more file')}"] if len(found) > 20 else [])


def _worst_of(results):
    from relconsole.engine.decision import worst
    return worst([r.verdict for r in results])


def cmd_replay(args) -> int:
    """Exit with the worst §8 decision of the sheets; 3 when the workspace lease is held or lost."""
    from relconsole.cli.progress import progress_reporter
    from relconsole.engine.gate import importrun
    from relconsole.engine.gate.report import replay_lines, replay_payload
    from relconsole.engine.gate.replay.replay import replay
    from relconsole.engine.gate.replay.replayoptions import ReplayOptions, Shard
    from relconsole.engine.gate.wslease.wslease import open_store
    review = load(args)
    try:
        if review.errors:
            emit(args, {"errors": errors_payload(review)}, [], review.errors, EXIT_BAD_INPUT)
            return EXIT_BAD_INPUT
        importrun.ensure(review)
        options = ReplayOptions(args.runs, args.workspace, args.holder, args.ttl_seconds,
                                args.artifacts, args.shard or Shard(), args.fresh_worktrees)
        store = open_store(args.lease_url, review.repo.common_dir)
        try:
            with progress_reporter(sys.stderr, not args.json) as report:
                outcome = replay(review, store, options, report.replay)
        finally:
            store.close()
        overall = outcome.overall()  # the gate history is decide's: CI runs decide over the sheets
        emit(args, replay_payload(outcome), replay_lines(outcome), code=overall.exit_code)
        return overall.exit_code
    finally:
        review.close()


def cmd_check_split(args) -> int:
    """Exit 1 with one line per offending commit and path (two kinds mixed, a relation that
    misses on its own commit), 0 when every commit keeps §9. ``--hook`` picks what to check
    from pre-commit's environment (``splithook.hook_target``) and runs no relation."""
    import os
    from relconsole.cli import splithook
    from relconsole.engine.repo import gitio
    from relconsole.engine.repo import splitcheck
    if (args.range is not None) + bool(args.staged) + bool(args.hook) != 1:
        raise UsageError("check-split takes a BASE..HEAD range, --staged or --hook")
    if args.base is not None and not args.hook:
        raise UsageError("check-split: --base goes with --hook (a range names its own base)")
    repo = gitio.open_repo(args.repo)
    root = repo.working_tree_dir or repo.git_dir  # a bare repository has history, no work tree
    spec, staged, static, what = args.range, bool(args.staged), args.static, ""
    if args.hook:
        try:
            mode, spec = splithook.hook_target(os.environ)
        except ValueError as exc:
            raise UsageError(f"check-split --hook: {exc}") from None
        staged, static = mode != splithook.RANGE, True
        if mode == splithook.BRANCH:
            spec, what = _branch_range(repo, root, args.base)
    if spec:
        _refuse_half_range(spec)
    if staged and Path(repo.git_dir, "MERGE_HEAD").exists():
        print("relconsole: concluding a merge: check the range once it is committed "
              "(check-split judges a merge by what it adds beyond its parents)", file=sys.stderr)
        if not spec:
            return EXIT_PASS
        staged = False
    found, notes, parts, commits = [], [], [], 0
    if spec:
        commits, found, notes = _range_offences(root, spec, not args.json, static)
        notes = [] if args.hook else notes  # the hook's static run is its rule, not a choice to warn of
        parts.append(f"{counted(commits, 'commit')} in {one_line(spec)}{what}")
    if staged:
        commit, layout, more = splitcheck.staged_check(root)
        found = found + more
        parts.append(f"the staged commit ({counted(len(commit.paths), 'path')})")
        if splitcheck.relation_commits([commit], layout):  # the hook stays a path check: say what it left
            notes.append("the staged commit changes the catalog or a seeds file: --staged runs no relation; "
                         "check-split BASE..HEAD (CI) runs the ones it adds or changes on its own commit")
    checked = " and ".join(parts)
    payload = {"range": spec, "staged": staged, "commits_checked": commits + staged,
               "offences": [{"commit": o.commit, "path": o.path, "why": o.why} for o in found], "notes": notes}
    code = EXIT_REJECT if found else EXIT_PASS
    lines = [f"{o.commit[:12]} {one_line(o.path)}: {one_line(o.why)}" for o in found]
    emit(args, payload, lines or [f"split check: {checked} checked, no offence"],
          code=code)
    if not args.json:
        for note in notes:
            print(f"relconsole: warning: {one_line(note)}", file=sys.stderr)
    if found and not args.json:  # stdout stays one line per offence, for scripts
        print(f"relconsole: split check: {checked} checked, {counted(len(found), 'offence')} "
              f"({see('commits', 'the-split-check')})", file=sys.stderr)
    return code


def _branch_range(repo, root, base: str | None) -> tuple[str | None, str]:
    """``("MERGE_BASE..HEAD", " (the branch since ...)")``: the commits of the checked-out branch
    since its merge base with the base ref (``base``, else the review's default), for
    ``--hook`` outside a commit; ``(None, "")`` before the first commit. Raises GitError (exit 3)
    for an unknown base, or a base that shares no history with HEAD (a shallow clone)."""
    from relconsole.engine.errors import GitError
    from relconsole.engine.repo import gitio
    from relconsole.engine.repo.baseref import resolve_base
    if gitio.run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok=None).returncode != 0:
        return None, ""
    name, sha = resolve_base(repo, base)
    proc = gitio.run_git(root, "merge-base", sha, "HEAD", ok=None)
    if proc.returncode != 0:
        shallow = gitio.run_git(root, "rev-parse", "--is-shallow-repository", ok=None).stdout.strip() == b"true"
        raise GitError(f"check-split --hook: {one_line(name)} and HEAD share no commit"
                       f"{'; ' + gitio.SHALLOW_FIX if shallow else ''}; or give the range: "
                       f"pre-commit run --from-ref {one_line(name)} --to-ref HEAD")
    return f"{proc.stdout.decode().strip()}..HEAD", f" (the branch since its merge base with {one_line(name)})"


def _range_offences(root, spec: str, shown: bool, static: bool = False) -> tuple[int, list, list[str]]:
    """``(commits checked, offences oldest commit first, notes)`` of the range ``spec``: the
    split's own, and for each commit that changes the catalog or a seeds file, the relations it
    adds or changes that miss on its own tree (``holdcommits``; a range without such a commit
    runs nothing, and so does ``static``), each commit's progress on stderr when ``shown``."""
    from relconsole.cli.progress import progress_reporter
    from relconsole.engine.repo import splitcheck
    commits, layout, found = splitcheck.range_check(root, spec)
    changing = [] if static else splitcheck.relation_commits(commits, layout)
    if not changing:
        return len(commits), found, ["--static: no relation of the range's catalog commits was run"] if static else []
    from relconsole.engine.gate.holdcommits import range_offences
    with progress_reporter(sys.stderr, shown) as report:
        more, notes = range_offences(root, changing, report.step)
    order = {c.sha: n for n, c in enumerate(commits)}
    return len(commits), sorted(found + more, key=lambda o: order.get(o.commit, 0)), notes


def _refuse_half_range(spec: str) -> None:
    """UsageError (64) for a range with an empty or blank side: ``"..HEAD"`` is what the
    README's ``"$(git merge-base …)..HEAD"`` becomes when merge-base fails (a shallow CI
    clone), and git reads it as HEAD..HEAD: no commit checked, a pass (new-user trial)."""
    sides = spec.split("...") if "..." in spec else spec.split("..")
    if len(sides) == 2 and not all(side.strip() and side == side.strip() for side in sides):
        raise UsageError(f"check-split: {one_line(spec)!r} has an empty or blank side: give both, "
                         f"as in \"$(git merge-base origin/main HEAD)..HEAD\" (did git merge-base fail? "
                         f"a shallow clone needs fetch-depth: 0)")
