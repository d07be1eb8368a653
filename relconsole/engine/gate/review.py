"""One review: everything a reviewer sees for a patch, computed from git and the oracle.

``load_review`` reads the oracle from the base ref's tip (SPEC §2; ``oracleload``), maps
the touched paths between the merge base and HEAD to owners, checks leases, pins and
freezes, and collects bad input files instead of stopping at the first; ``finish_review``
adds the quarantine (``quarantineload``) and what the patch did (``patchfacts``: §9 flags,
split, identities, acknowledgements). ``reviewrun.run_review`` then evaluates the touched
relations on HEAD's tree in worker processes. The console, the CLI and the pytest plugin
all go through this module, and report the one decision ``Review.decision`` makes (§8).
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relconsole.engine.repo import gitio
from relconsole.engine.repo.touched import start_touched
from relconsole.engine.repo.treeview import TreeView

from relconsole.engine.oracle.candidates import Candidate
from relconsole.engine.oracle.seedrows import SeedRow
from relconsole.engine.oracle.catalog import Catalog, Relation
from relconsole.engine.gate.checklist import checklist_verdicts, merge_checklist
from relconsole.engine.gate import exercised, importmap
from relconsole.engine.gate.exercised import Unexercised
from relconsole.engine.repo.baseref import resolve_base
from relconsole.engine.repo.config import Layout, layout_from_pyproject
from relconsole.engine.decision import Decision, worst
from relconsole.engine.errors import (EXIT_BAD_INPUT, EXIT_GAP, EXIT_PASS, BadInputError, CommitRefused, UsageError,
                                      did_you_mean)
from relconsole.engine.oracle.freezes import FreezeRow, for_relation
from relconsole.engine.oracle.leases import LeaseStatus, reading_refusal
from relconsole.engine.repo.owners import GAP, PROTECTED, UNKNOWN, Binding, bind
from relconsole.engine.gate.flags.acks import Ack, by_author, flag_ids
from relconsole.engine.gate.flags.flaglevels import BLOCK, OFF, WARN, check_flag_levels, flag_kind, flag_level
from relconsole.engine.gate.flags.patchflags import Flag
from relconsole.engine.relations.records import RelationResult
from relconsole.engine.repo.workspace import export_oracle, scratch_dir
from relconsole.engine.gate.oracleload import load_oracle
from relconsole.engine.gate.patchfacts import _flag, load_acks, patch_catalog, _split
from relconsole.engine.gate.quarantineload import load_quarantine



def today_from_env() -> dt.date:
    """``RELCONSOLE_TODAY`` (YYYY-MM-DD) when set, else the local date (§4 injectable today)."""
    value = os.environ.get("RELCONSOLE_TODAY")
    if not value:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"RELCONSOLE_TODAY={value!r} is not a YYYY-MM-DD date") from None


@dataclass
class Replayed:
    """A relation's replay (§7): its sheet, the §8 decision of the sheet, where it was written."""

    sheet: dict
    decision: Decision
    path: Path | None = None

    def misses(self, side: str) -> tuple[int, int]:
        """(misses, runs) on ``side`` (``head`` or ``base``)."""
        counts = self.sheet.get("runs", {}).get(side, {})
        return int(counts.get("misses", 0)), int(counts.get("runs", 0))


@dataclass
class Review:
    """The state of one review. Paths are repository-relative POSIX strings."""

    repo: gitio.Repository  # or a GitPython Repo: only its directories are read
    base_ref: str
    head_ref: str
    head_sha: str
    base_tip: str
    merge_base: str
    oracle_sha: str
    oracle_from: str
    today: dt.date
    layout: Layout
    oracle_dir: Path
    catalog: Catalog | None = None
    errors: list[BadInputError] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    leases: list[LeaseStatus] = field(default_factory=list)
    pins: dict[str, str] = field(default_factory=dict)
    freezes: list[FreezeRow] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    seed_rows: list[SeedRow] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)  # §9 review flags, oldest commit first
    identities: dict[str, str] = field(default_factory=dict)
    changed_identity: set[str] = field(default_factory=set)
    seed_problems: dict[str, str] = field(default_factory=dict)
    results: dict[str, RelationResult] = field(default_factory=dict)
    recorded: dict = field(default_factory=dict)  # relation id -> {path: lines it ran on HEAD}, see exercisedrecord
    bites: dict = field(default_factory=dict)  # relation id -> bite.BiteVerdict | None, from `relconsole bite`'s cache
    replays: dict[str, Replayed] = field(default_factory=dict)  # by relation id, from `b`/`replay`
    workspace_leases: list = field(default_factory=list)  # wslease.WorkspaceLease, from the store
    candidate_states: dict = field(default_factory=dict)  # path -> confirm.ConfirmState (§10)
    lease_store_note: str = ""  # why workspace leases could not be listed, if so
    unjudged: list[str] = field(default_factory=list)  # test files the flag rules could not read
    split: list = field(default_factory=list)  # splitcheck.Offence of merge_base..head (§9), from finish_review
    split_problem: str = ""  # why the split check could not be made (a shallow clone), else ""
    acks: list[Ack] = field(default_factory=list)  # reviewers' acknowledgements on the base ref (§9 review:)
    authors: list[tuple[str, str]] = field(default_factory=list)  # (name, email) of the patch's authors
    finished: bool = True  # False until finish_review read what load_review(deferred=True) left out
    _lease_index: tuple | None = field(default=None, repr=False, compare=False)  # see lease()
    _owned: tuple | None = field(default=None, repr=False, compare=False)  # see touched_relations()
    _flag_ids: dict = field(default_factory=dict, repr=False, compare=False)  # see flag_id()
    _checklist_static: tuple | None = field(default=None, repr=False, compare=False)  # see checklist.merge_checklist
    _parse_caches: dict = field(default_factory=dict, repr=False, compare=False)  # see _parse_cache()
    _unexercised: tuple | None = field(default=None, repr=False, compare=False)  # see unexercised()
    _reached_cache: tuple | None = field(default=None, repr=False, compare=False)  # see _reached()

    @property
    def root(self) -> Path:
        return Path(self.repo.working_tree_dir)

    @property
    def relations(self) -> list[Relation]:
        """Catalog relations in catalog order ([] when the catalog did not load)."""
        return list(self.catalog.relations.values()) if self.catalog else []

    def touched_relations(self) -> list[str]:
        """Ids of relations owning at least one touched path, in catalog order.

        The owned set is kept while ``bindings`` holds the same (frozen) Binding objects,
        checked by identity on every call: the console asks after each finished relation,
        and walking 20,000 bindings cost 25 ms each time.
        """
        members = tuple(self.bindings)
        if self._owned is None or self._owned[0] != members:
            self._owned = (members, frozenset(rid for b in members for rid in b.relations))
        owned = self._owned[1]
        return [r.id for r in self.relations if r.id in owned]

    def gaps(self) -> list[Binding]:
        return [b for b in self.bindings if b.state == GAP]

    def unexercised(self, compute: bool = True) -> list[Unexercised]:
        """The owned ``.py`` files whose changed statements no relation ran on HEAD (SPEC §3
        covered means exercised; ``exercised``), in the bindings' order. A file with a bound
        relation that has not run yet is left out: its evidence is pending, not missing. The
        first call after the relations ran reads git (a diff per changed file): a console makes
        it on its worker thread; later calls with the same results are answered from a cache.
        ``compute`` False: the last answer made, or [] (what a UI thread may ask without git)."""
        if not compute:
            return self._unexercised[1] if self._unexercised is not None else []
        if not self.results and not self.recorded:
            return []
        key = (tuple(self.bindings), tuple((rid, id(r)) for rid, r in self.results.items()), id(self.recorded),
               len(self.recorded))
        if self._unexercised is not None and self._unexercised[0] == key:
            return self._unexercised[1]
        bound = {b.path: b.relations for b in self.bindings}
        changed = {path: spans for path, spans in exercised.review_changed(self).items()
                   if all(rid in self.results or rid in self.recorded for rid in bound.get(path, ()))}
        ran = exercised.executed_by(self.results.values())
        for rid, lines_by_path in self.recorded.items():
            for path, lines in lines_by_path.items():
                ran.setdefault(path, set()).update(lines)
        found = exercised.unexercised(changed, ran, lambda path: bound.get(path, ()),
                                      exercised.drawn_by(self.results.values()))
        self._unexercised = (key, found)
        return found

    def unexercised_gaps(self) -> list[Unexercised]:
        """``unexercised()`` when ``[tool.relconsole] unexercised`` makes it a gap (the default),
        else []."""
        return self.unexercised() if self.layout.unexercised == "gap" else []

    def lease(self, lease_id: str) -> LeaseStatus | None:
        """The first status whose manifest has ``lease_id``, or None.

        Answered from an index of ``leases`` that is rebuilt whenever the list's members
        change (compared by identity, a C-speed tuple comparison); a miss, or a hit whose
        manifest no longer has that id, scans the list. Rendering 5,000 relations used to
        scan 1,000 leases for each relation reading one.
        """
        members = tuple(self.leases)
        if self._lease_index is None or self._lease_index[0] != members:
            index: dict[str, LeaseStatus] = {}
            for status in members:
                if status.lease is not None:
                    index.setdefault(status.lease.id, status)
            self._lease_index = (members, index)
        found = self._lease_index[1].get(lease_id)
        if found is not None and found.lease is not None and found.lease.id == lease_id:
            return found
        return next((s for s in self.leases if s.lease and s.lease.id == lease_id), None)

    def lease_to_change(self, lease_id: str) -> LeaseStatus:
        """The one manifest an owner action (renew, re-hash, history) acts on: by lease id,
        or by file stem for a manifest that did not parse. Raises UsageError (exit 64) when
        there is none, BadInputError (exit 5) when two manifests share the id (§4: which
        one would a renewal extend?), naming both files."""
        found = [s for s in self.leases if s.lease is not None and s.lease.id == lease_id]
        found = found or [s for s in self.leases if s.id == lease_id]
        if not found:
            unparsed = [s.source for s in self.leases if s.lease is None]
            hint = f" (manifests that did not parse: {', '.join(unparsed)})" if unparsed else ""
            known = [s.lease.id if s.lease is not None else s.id for s in self.leases]
            raise UsageError(f"no lease {lease_id!r} in {self.base_ref}{did_you_mean(lease_id, known)}{hint}")
        if len(found) > 1:
            raise BadInputError(found[1].source, f"lease id {lease_id!r} is also used by {found[0].source}: "
                                "give each manifest its own id first", 1)
        return found[0]

    def freeze_for(self, relation_id: str) -> FreezeRow | None:
        return for_relation(self.freezes, relation_id)

    def blocked_reason(self, relation: Relation) -> str | None:
        """Why the relation cannot run (its lease or seeds fail closed), or None."""
        if relation.lease_id:
            return reading_refusal(self.lease(relation.lease_id), relation.id, relation.lease_id)
        return self.seed_problems.get(relation.id)

    @functools.cached_property
    def oracle_branch(self) -> str:
        """The branch console commits go onto (§9): ``[tool.relconsole] oracle_branch`` when set,
        else the review's base ref when it is a local branch, else the configured base branch
        (for what a dialog says; ``commit_branch`` refuses to commit there)."""
        if self.layout.oracle_branch:
            return self.layout.oracle_branch
        if gitio.run_git(self.root, "show-ref", "--verify", "--quiet", f"refs/heads/{self.base_ref}",
                         ok=None).returncode == 0:
            return self.base_ref
        return self.layout.target_branch

    def commit_branch(self) -> str:
        """``oracle_branch``, where a console commit may go. Raises CommitRefused when the review's
        base is not a local branch (a remote-tracking ``origin/main``, a tag, a commit) and no
        ``oracle_branch`` is configured: the commit would land where this review does not read;
        and when the review reads its oracle from HEAD (the patch's layout would choose)."""
        if self.oracle_from == "HEAD":  # the layout, quarantine dir and branch would be the patch's choice
            raise CommitRefused("this review reads the oracle from HEAD (--oracle-from HEAD): the patch's "
                                "[tool.relconsole] would decide where a commit goes; review from the base to commit")
        branch = self.oracle_branch
        if not self.layout.oracle_branch and branch != self.base_ref:
            raise CommitRefused(f"the review's base {self.base_ref} is not a local branch, so a commit would land "
                                f"on {branch}, which this review does not read: review with --base {branch}, or "
                                "set [tool.relconsole] oracle_branch")
        return branch

    def flag_id(self, flag: Flag) -> str:
        """The flag's id (``acks.fingerprint``): what ``relconsole ack`` and ``w`` name it by.
        A flag not known yet has its id read with every other new flag's, in one ``git cat-file``."""
        if flag not in self._flag_ids:
            fresh = [f for f in dict.fromkeys([*self.flags, flag]) if f not in self._flag_ids]
            self._flag_ids.update(flag_ids(self.root, self.head_sha, fresh))
        return self._flag_ids[flag]

    def matching_ack(self, flag: Flag) -> Ack | None:
        """The acknowledgement on the base ref whose fingerprint is this flag's, void or not."""
        if not self.acks:
            return None
        wanted = self.flag_id(flag)
        return next((a for a in self.acks if a.id == wanted), None)

    def flag_level(self, flag: Flag) -> str:
        """``block``, ``warn`` or ``off``: the flag's level under the base's ``[tool.relconsole]
        flags`` (``flaglevels``). An environment probe counts only in a file a relation's
        subject imported or ran on HEAD (issue 35): once every touched relation ran, a
        blocking probe in a Python file none reached is a warning (code no judged call runs
        cannot tell the judge from production)."""
        level = flag_level(flag, self.layout.flags)
        if level == BLOCK and flag.name == "environment_probe" and flag.path.endswith((".py", ".pyw")):
            reached = self._reached()
            if reached is not None and flag.path not in reached and self._unreachable(flag.path):
                return WARN
        return level

    def _unreachable(self, path: str) -> bool:
        """Whether no code can reach the Python file ``path`` but by name from outside the tree:
        it is not at the repository root (``setup.py`` and other build scripts run at install),
        not a ``conftest.py``, and no ``.py`` file of HEAD names its module in an import (a lazy
        or conditional import elsewhere reaches it in production; red team, issue 35)."""
        parts = path.split("/")
        if len(parts) == 1 or parts[-1] == "conftest.py":
            return False
        name = parts[-2] if parts[-1] in ("__init__.py", "__init__.pyw") else parts[-1].rsplit(".", 1)[0]
        if not name.isidentifier():
            return True  # no import statement can name it
        cache = self._parse_caches.setdefault("importers", {})
        if name not in cache:
            pattern = rf"^\s*(from|import)\s[^#]*\b{name}\b"
            proc = gitio.run_git(self.root, "grep", "-l", "-E", pattern, self.head_sha, "--", "*.py", "*.pyw", ok=None)
            cache[name] = proc.returncode == 1  # 1: no file matches
        return cache[name]

    def _reached(self) -> frozenset | None:
        """The tree files the relations' calls imported or ran on HEAD, once every touched
        relation has a result (None before: the probes count until then). Cached per results."""
        touched = self.touched_relations()
        if not touched or any(rid not in self.results for rid in touched):
            return None
        key = tuple((rid, id(r)) for rid, r in self.results.items())
        if self._reached_cache is None or self._reached_cache[0] != key:
            runs = [record.run or {} for r in self.results.values() for record in (r.first, *r.reruns)
                    if record is not None]
            paths = {path for run in runs for path in (run.get("imported") or [])}
            paths |= {path for run in runs for path in (run.get("executed") or {})}
            self._reached_cache = (key, frozenset(paths))
        return self._reached_cache[1]

    def flag_json(self, flag: Flag) -> dict:
        """The flag as every JSON report gives it: ``Flag.to_json`` with its ``id``, ``kind``,
        ``level`` and ``acknowledged`` (``{by, reason, date}`` or None)."""
        ack = self.acknowledgement(flag)
        return flag.to_json() | {"id": self.flag_id(flag), "kind": flag_kind(flag), "level": self.flag_level(flag),
                                 "acknowledged": None if ack is None else {
                                     "by": ack.by, "reason": ack.reason, "date": ack.raw.get("date")}}

    def standing(self, flag: Flag) -> bool:
        """Whether the flag decides against the patch: level ``block`` and not acknowledged."""
        return self.flag_level(flag) == BLOCK and self.acknowledgement(flag) is None

    def acknowledgement(self, flag: Flag) -> Ack | None:
        """The acknowledgement that clears this flag (§9 ``review:``), or None: none matches,
        or the one that does was made by an author of the patch and counts for nothing."""
        ack = self.matching_ack(flag)
        return None if ack is None or by_author(ack, self.authors) else ack

    def decision(self, relation_ids: list[str] | None = None) -> Decision:
        """The PR's decision (§8, §9): the worst of everything that decides a patch.

        In this order, so that a relation's miss is the headline and anything as bad stands
        beside it: the touched relations' verdicts (``relation_ids``: only these, as a CI
        shard judges its slice; default every touched relation), the review flags, the split
        check, the merge checklist. A replayed relation's decision is its sheet's (§8 table
        row); a touched relation not yet run makes it ``hold`` (evidence pending); a bad
        input file makes it ``abort`` with reason ``bad_input``; a review flag makes it at
        least ``reject`` with reason ``review_flag:<name>`` unless a reviewer who is not the
        patch's author acknowledged it on the base ref (``acks``); a commit that mixes kinds
        is ``reject`` ``commit_split``, and a split check that could not be made (a shallow
        clone) ``abort`` ``split_unchecked``; a failed checklist item is ``reject``
        ``checklist:<key>``. Every front end (run, flags, gate, the pytest plugin, the
        console) reports this one decision. A review loaded with ``deferred`` reads its
        flags first: no decision is ever made without them.
        """
        if not self.finished:
            finish_review(self)
        if self.errors:
            return Decision("abort", "bad_input", None, None, self.errors[0].one_line())
        return worst(self.relation_verdicts(relation_ids) + self.patch_verdicts())

    def relation_verdicts(self, relation_ids: list[str] | None = None) -> list[Decision]:
        """One decision per touched relation (``relation_ids``: only these), in catalog order:
        its replay sheet's, else its run's, else ``hold`` ``not_run``."""
        verdicts = []
        for rid in self.touched_relations() if relation_ids is None else relation_ids:
            if rid in self.replays:
                verdicts.append(self.replays[rid].decision)
                continue
            result = self.results.get(rid)
            verdicts.append(result.verdict if result else
                            Decision("hold", "not_run", None, rid, "a touched relation has not run"))
        return verdicts

    def patch_verdicts(self) -> list[Decision]:
        """The decisions about the patch as a whole, the same in every CI shard: standing review
        flags, split offences (§9) and failed checklist items, each ``reject`` (an unmade split
        check: ``abort``)."""
        verdicts = [Decision("reject", f"review_flag:{f.name}", None, None, f"{f.where()}: {f.detail}")
                    for f in self.flags if self.standing(f)]
        verdicts += [Decision("reject", "commit_split", None, None, f"{o.commit[:10]} {o.path}: {o.why}")
                     for o in self.split]
        if self.split_problem:
            verdicts.append(Decision("abort", "split_unchecked", None, None, self.split_problem))
        return verdicts + checklist_verdicts(merge_checklist(self))

    def exit_code(self, relation_ids: list[str] | None = None) -> int:
        """The §8 exit code of this review: 5 for a bad file, else the decision's, else 2 for a gap
        (an unowned path, or a changed statement no relation ran)."""
        if self.errors:
            return EXIT_BAD_INPUT
        code = self.decision(relation_ids).exit_code
        if code == EXIT_PASS and (self.gaps() or self.unexercised_gaps()):
            return EXIT_GAP
        return code

    def close(self) -> None:
        """Remove the review's temporary oracle directory."""
        shutil.rmtree(self.oracle_dir, ignore_errors=True)
        if isinstance(self.repo, gitio.Repository):
            self.repo.close()  # its git cat-file (a later read starts another)

    def __enter__(self) -> "Review":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def load_review(repo_path: str | Path = ".", base_ref: str | None = None, head_ref: str = "HEAD",
                today: dt.date | None = None, oracle_from: str = "base",
                hash_progress: Callable[[str, int, int], None] | None = None, deferred: bool = False) -> Review:
    """Build a Review for ``head_ref`` against ``base_ref`` (default: ``baseref.resolve_base``'s order:
    the setting in the reviewed commit's pyproject.toml, origin/HEAD, main).

    ``deferred``: leave the facts no relation run reads (the quarantine, the §9 review flags,
    the patch's own catalog) to ``finish_review``, which a caller runs while relations run
    (``run_review(meanwhile=...)``); the review's decision needs them.

    ``hash_progress(label, done_bytes, total_bytes)``, when given, is called while a
    lease corpus or pinned fixture is hashed (``label`` is its repository path), after
    each chunk read, with rising ``done_bytes`` ending at ``total_bytes``: a console can
    show a progress bar for big corpora. Digests of committed files are cached by blob
    oid (``hashcache``), so an unchanged corpus is not read again and reports nothing.

    Raises UsageError for a path outside git, GitError (abort) for unknown refs or a
    missing merge base. Bad oracle files do not raise: they land in ``review.errors``.
    """
    if base_ref:
        repo, (head_sha, base_tip) = gitio.open_with_refs(repo_path, (head_ref, base_ref))  # one git call
        head_sha = head_sha or gitio.resolve(repo, head_ref)
        if base_tip is None:  # unknown, or git's own error: asked alone for its words
            base_ref, base_tip = resolve_base(repo, base_ref)
    else:  # the setting of the reviewed commit, origin/HEAD or main (baseref)
        repo, (head_sha,) = gitio.open_with_refs(repo_path, (head_ref,))
        head_sha = head_sha or gitio.resolve(repo, head_ref)
        base_ref, base_tip = resolve_base(repo, None, head_sha)
    merge_base = gitio.merge_base(repo, base_tip, head_sha)
    oracle_sha = head_sha if oracle_from.upper() == "HEAD" else base_tip
    errors: list[BadInputError] = []
    oracle_view = TreeView(repo, oracle_sha)
    try:
        pyproject = oracle_view.read_text("pyproject.toml")
        layout = layout_from_pyproject(pyproject)
        check_flag_levels(layout.flags, text=pyproject)
    except BadInputError as exc:
        errors.append(exc)
        layout = Layout()
    oracle_dir = scratch_dir("relconsole-oracle-")
    review = Review(repo, base_ref, head_ref, head_sha, base_tip, merge_base, oracle_sha,
                    "HEAD" if oracle_sha == head_sha and oracle_from.upper() == "HEAD" else "base",
                    today or today_from_env(), layout, oracle_dir, errors=errors)
    review._diff = diff = start_touched(repo, merge_base, head_sha)  # git diffs while the oracle is read
    try:
        export_oracle(repo, oracle_sha, layout.protected, oracle_dir)
        load_oracle(review, oracle_view, hash_progress)
        _bind(review)
        importmap.apply(review)  # the base's import record, when one was made (§3 "via import")
        review.finished = False
        if not deferred:
            finish_review(review)
    except BaseException:  # the oracle copy can be gigabytes: never leave it behind
        diff.cancel()
        review.close()
        raise
    return review


def finish_review(review: Review) -> None:
    """The facts ``load_review(deferred=True)`` left out: the quarantine, the review flags and
    the patch's catalog. Bad files land in ``review.errors``; raises GitError (abort) as
    ``load_review`` does."""
    if review.finished:
        return
    review.finished = True
    load_quarantine(review, TreeView(review.repo, review.oracle_sha))
    _flag(review)
    _split(review)
    patch_catalog(review)
    drop_flags_off(review)
    load_acks(review)


def drop_flags_off(review: Review) -> None:
    """Leave out the flags whose level is ``off`` (the base's ``[tool.relconsole] flags``)."""
    review.flags[:] = [f for f in review.flags if review.flag_level(f) != OFF]


def _bind(review: Review) -> None:
    """Bind the touched paths (their git diff, when ``load_review`` started it, is ``_diff``)."""
    diff = review.__dict__.pop("_diff", None) or start_touched(review.repo, review.merge_base, review.head_sha)
    touched = diff.result()
    owners = review.catalog.owners if review.catalog else []
    review.bindings = bind(owners, touched, review.layout.protected)
    if review.catalog is None:  # no owner map: say "unknown", never a false gap
        review.bindings = [Binding(b.touched, UNKNOWN if b.state != PROTECTED else PROTECTED, None, ())
                           for b in review.bindings]
