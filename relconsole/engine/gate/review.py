"""One review: everything a reviewer sees for a patch, computed from git and the oracle.

``load_review`` reads the oracle from the base ref's tip (SPEC §2), maps the touched
paths between the merge base and HEAD to owners, checks leases, pins and freezes,
validates quarantine, and collects bad input files instead of stopping at the first.
``run_review`` then evaluates the touched relations on HEAD's tree in worker processes.
The console, the CLI and the pytest plugin all go through this module.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import gzip
import json
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relconsole.engine.repo import gitio

from relconsole.engine.oracle import jsonnumbers
from relconsole.engine.oracle.candidates import (SEEDS_SUFFIX, Candidate, CandidateRead, InputShape, SeedRow, Verdict,
                                          read_candidate, validate_candidate, validate_seed_rows)
from relconsole.engine.oracle.candidates import input_shape as candidate_input_shape
from relconsole.engine.oracle.catalog import Catalog, Relation, check_row, load_catalog
from relconsole.engine.gate.checklist import checklist_verdicts, merge_checklist
from relconsole.engine.gate import importmap
from relconsole.engine.repo.config import Layout, layout_from_pyproject
from relconsole.engine.decision import Decision, worst
from relconsole.engine.errors import (EXIT_BAD_INPUT, EXIT_GAP, EXIT_PASS, BadInputError, CommitRefused, GitError,
                                      RelconsoleError, UsageError)
from relconsole.engine.oracle.freezes import FreezeRow, assess, for_relation, parse_rows
from relconsole.engine.oracle.hashcache import CommitFiles, HashCache, sha256_stream
from relconsole.engine.oracle.leases import LeaseStatus, lease_status, parse_lease, pin_states, reading_refusal
from relconsole.engine.oracle.leases import header_fields
from relconsole.engine.repo.owners import GAP, PROTECTED, UNKNOWN, Binding, bind, protected, protection
from relconsole.engine.oracle.parsecache import MAX_ENTRIES, ParseCache, current_fingerprint
from relconsole.engine.gate.acks import Ack, by_author, flag_ids, parse_acks, range_authors, with_makers
from relconsole.engine.gate.patchflags import Flag, imported_probes, patch_flags, probed_by_name
from relconsole.engine.repo.splitcheck import check_split, layout_at
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.relations.records import RelationResult, RunPlan
from relconsole.engine.relations.runner import run_all
from relconsole.engine.oracle.textedit import first_bad_jsonl_line, jsonl_lines
from relconsole.engine.repo.workspace import build_run_tree, export_oracle, scratch_dir

DEFAULT_BASE = "main"


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
            raise UsageError(f"no lease {lease_id!r} in {self.base_ref}{hint}")
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
                    for f in self.flags if self.acknowledgement(f) is None]
        verdicts += [Decision("reject", "commit_split", None, None, f"{o.commit[:10]} {o.path}: {o.why}")
                     for o in self.split]
        if self.split_problem:
            verdicts.append(Decision("abort", "split_unchecked", None, None, self.split_problem))
        return verdicts + checklist_verdicts(merge_checklist(self))

    def exit_code(self, relation_ids: list[str] | None = None) -> int:
        """The §8 exit code of this review: 5 for a bad file, else the decision's, else 2 for a gap."""
        if self.errors:
            return EXIT_BAD_INPUT
        code = self.decision(relation_ids).exit_code
        if code == EXIT_PASS and self.gaps():
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
    """Build a Review for ``head_ref`` against ``base_ref`` (default ``main``).

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
    repo, (head_sha, base_tip) = gitio.open_with_refs(repo_path, (head_ref, base_ref or DEFAULT_BASE))  # one git call
    head_sha = head_sha or gitio.resolve(repo, head_ref)
    if base_tip is None:  # unknown (or origin/main), or git's own error: asked one by one
        base_ref, base_tip = _base(repo, base_ref)
    else:
        base_ref = base_ref or DEFAULT_BASE
    merge_base = gitio.merge_base(repo, base_tip, head_sha)
    oracle_sha = head_sha if oracle_from.upper() == "HEAD" else base_tip
    errors: list[BadInputError] = []
    oracle_view = gitio.TreeView(repo, oracle_sha)
    try:
        layout = layout_from_pyproject(oracle_view.read_text("pyproject.toml"))
    except BadInputError as exc:
        errors.append(exc)
        layout = Layout()
    oracle_dir = scratch_dir("relconsole-oracle-")
    review = Review(repo, base_ref, head_ref, head_sha, base_tip, merge_base, oracle_sha,
                    "HEAD" if oracle_sha == head_sha and oracle_from.upper() == "HEAD" else "base",
                    today or today_from_env(), layout, oracle_dir, errors=errors)
    review._diff = diff = gitio.start_touched(repo, merge_base, head_sha)  # git diffs while the oracle is read
    try:
        export_oracle(repo, oracle_sha, layout.protected, oracle_dir)
        _load_oracle(review, oracle_view, hash_progress)
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
    _load_quarantine(review, gitio.TreeView(review.repo, review.oracle_sha))
    _flag(review)
    _split(review)
    _patch_catalog(review)
    _load_acks(review)


def _load_acks(review: Review) -> None:
    """The acknowledgements of review flags, always from the base ref (a patch's own acks file,
    even under ``--oracle-from HEAD``, acknowledges nothing), and the patch's authors, whose
    own acknowledgements count for nothing."""
    path = review.layout.acks
    review.acks = _collect(review, parse_acks, gitio.TreeView(review.repo, review.base_tip).read_text(path),
                           path) or []
    if review.acks:
        review.acks = with_makers(review.root, review.base_tip, path, review.acks)
        review.authors = range_authors(review.root, review.merge_base, review.head_sha)
        if review.flags:  # the ids read here, off any console's UI thread
            review.flag_id(review.flags[0])


def _base(repo: gitio.Repository, base_ref: str | None) -> tuple[str, str]:
    """(name, sha) of the base ref; by default ``main``, else ``origin/main`` (a CI clone)."""
    if base_ref:
        return base_ref, gitio.resolve(repo, base_ref)
    try:
        return DEFAULT_BASE, gitio.resolve(repo, DEFAULT_BASE)
    except GitError:
        try:
            return f"origin/{DEFAULT_BASE}", gitio.resolve(repo, f"origin/{DEFAULT_BASE}")
        except GitError:
            raise GitError(f"no {DEFAULT_BASE} branch (nor origin/{DEFAULT_BASE}): name the base "
                           "with --base, or fetch it (git fetch origin main)") from None


def _collect(review: Review, fn: Callable, *args):
    try:
        return fn(*args)
    except BadInputError as exc:
        review.errors.append(exc)
        return None


def _load_oracle(review: Review, view: gitio.TreeView,
                 hash_progress: Callable[[str, int, int], None] | None = None) -> None:
    layout = review.layout
    digest = _oracle_digest(review, hash_progress)
    leases = _parse_cache(review, "lease")
    if not view.exists(layout.catalog):
        review.errors.append(BadInputError(layout.catalog, f"no catalog in {review.base_ref}"))
    else:
        review.catalog = _collect(review, _cached_catalog, review, view, layout.catalog, layout.catalog)
    manifests = [p for p in view.list_files(layout.leases_dir) if p.endswith((".yaml", ".yml"))]
    lease_ids = {path: view.blob_id(path) for path in manifests}
    texts = view.read_texts([p for p in manifests if (lease_ids[p], p) not in leases.entries])  # one git call
    for path in manifests:
        try:
            lease = leases.get(lease_ids[path], path, lambda: parse_lease(texts[path], path))
        except BadInputError as exc:
            review.errors.append(exc)
            review.leases.append(LeaseStatus(path, "invalid", exc.one_line()))
            continue
        status = lease_status(lease, review.oracle_dir, review.today, layout.expiring_window_days, digest)
        target = view.symlink_target(lease.path) if status.state == "missing" else None
        if target is not None:  # the export left out a link that leaves the tree (§4: invalid)
            status = LeaseStatus(lease.source, "invalid", f"path {lease.path!r} is a symlink to {target!r}, "
                                 "outside the repository", lease, status.days_left)
        review.leases.append(status)
    leases.flush()
    _duplicate_lease_ids(review)
    review.pins = _collect(review, pin_states, view.read_text(layout.pins), review.oracle_dir,
                           layout.pins, digest) or {}
    digest.flush()  # the digests learnt by this load, written once
    rows = _collect(review, parse_rows, view.read_text(layout.freezes), layout.freezes) or []
    if review.catalog is not None:
        review.freezes = assess(rows, review.catalog, review.today)
        _check_seeds(review, view)
        review.identities = {r.id: r.identity(_callable_sources(r, view, layout.protected))
                             for r in review.relations}


def _oracle_digest(review: Review, hash_progress: Callable[[str, int, int], None] | None = None):
    """``digest(path, relative)`` for files exported from the oracle commit: sha256 by
    blob oid from the repository's hash cache, else streamed with ``hash_progress``.
    ``digest.flush()`` writes what it learnt to the cache (it writes at most once a second
    by itself)."""
    files = CommitFiles(review.repo.working_tree_dir or review.repo.git_dir, review.repo.git_dir,
                        review.oracle_sha, HashCache.for_git_dir(review.repo.git_dir))

    def digest(path: Path, relative: str) -> str:
        report = (lambda done, total: hash_progress(relative, done, total)) if hash_progress else None
        return files.sha256(path, relative, report)
    digest.flush = files.flush  # the caller writes the cache once it has hashed everything
    return digest


PROBE_CACHE_ENTRIES = 200_000
"""Changed modules whose probe findings are kept (about 150 bytes each): two reviews of a
patch touching 100,000 files."""


def _parse_cache(review: Review, kind: str, max_entries: int = MAX_ENTRIES) -> ParseCache:
    """The review's ``ParseCache`` of ``kind`` (read from the git directory once per review)."""
    if kind not in review._parse_caches:
        review._parse_caches[kind] = ParseCache(review.repo.git_dir, kind, current_fingerprint(), max_entries)
    return review._parse_caches[kind]


def _cached_catalog(review: Review, view: gitio.TreeView, path: str, source: str) -> Catalog | None:
    """``load_catalog`` of ``path`` in ``view`` (messages naming ``source``), parsed once per
    blob: the parse is kept under the git directory (``parsecache``). None when the commit
    has no such file. Raises BadInputError as ``load_catalog``."""
    blob = view.blob_id(path)
    if blob is None:
        return None
    cache = _parse_cache(review, "catalog")
    try:
        return cache.get(blob, source, lambda: load_catalog(view.read_text(path), source))
    finally:
        cache.flush()


def _duplicate_lease_ids(review: Review) -> None:
    seen: dict[str, str] = {}
    for status in review.leases:
        if status.lease is None:
            continue
        if status.lease.id in seen:
            review.errors.append(BadInputError(
                status.source, f"lease id {status.lease.id!r} is also used by {seen[status.lease.id]}", 1))
        seen[status.lease.id] = status.source


def _check_seeds(review: Review, view: gitio.TreeView) -> None:
    """§3: a seeds file with bad rows fails closed (the relation is blocked, exit 5)."""
    texts: dict[str, str | None] = {}
    problems: dict[tuple[str, str], BadInputError | None] = {}  # (path, schema) -> the file's first problem
    placed: dict[str, str | None] = {}  # path -> seeds_path_problem, asked once per file
    for relation in review.relations:
        path = relation.seeds_path
        if not path:
            continue
        if path not in placed:
            placed[path] = seeds_path_problem(review.layout, path)
        misplaced = placed[path]
        if misplaced:
            review.seed_problems[relation.id] = misplaced
            review.errors.append(BadInputError(review.layout.catalog, f"relation {relation.id!r}: {misplaced}",
                                               relation.line))
            continue
        if path not in texts:  # thousands of relations share a few seeds files
            texts[path] = view.read_text(path)
        text = texts[path]
        if text is None:
            review.seed_problems[relation.id] = f"seeds file {path} is absent"
            review.errors.append(BadInputError(path, f"seeds file of {relation.id} is absent"))
            continue
        key = (path, json.dumps(relation.input.get("schema"), sort_keys=True, default=str))
        if key not in problems:
            problems[key] = seed_file_problem(text, path, relation)
        problem = problems[key]
        if problem:
            review.seed_problems[relation.id] = problem.one_line()
            review.errors.append(problem)


def seeds_path_problem(layout, path: str) -> str | None:
    """Why ``path`` cannot name a seeds file (§3), or None: a plain repository-relative POSIX
    path (no leading ``/``, ``..``, ``.``, empty part, backslash or trailing ``/``) to a
    ``.jsonl`` file inside the protected tree and outside quarantine. A seeds file elsewhere
    would come from the patch's tree (the oracle overlays only the protected tree), and an
    absolute path would read the host's file."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        return f"seeds path {path!r} is not a plain path inside the repository"
    if not path.endswith(".jsonl"):
        return f"seeds path {path!r} is not a .jsonl file"
    if not protected(layout.protected, path) or path.startswith(layout.quarantine_dir.rstrip("/") + "/"):
        return (f"seeds path {path!r} is outside the protected tree ({', '.join(layout.protected)}; not quarantine): "
                "the patch would choose the relation's inputs")
    return None


def seed_file_problem(text: str, path: str, relation: Relation) -> BadInputError | None:
    """The first problem of a relation's seeds file against its input schema (§3), naming
    the file and line, or None when every row is valid."""
    count = 0
    for number, line in enumerate(jsonl_lines(text), 1):
        if not line.strip():
            continue
        count += 1
        try:
            value = jsonnumbers.loads(line)
        except json.JSONDecodeError as exc:
            return BadInputError(path, f"invalid JSON: {exc.msg}", number)
        reasons = check_row(value, relation.input.get("schema"))
        if reasons:
            return BadInputError(path, reasons[0], number)
    if count == 0:
        return BadInputError(path, "a seeds file is never empty", 1)
    return None


def _callable_sources(relation: Relation, view: gitio.TreeView, guarded: tuple[str, ...]) -> dict[str, bytes]:
    """Source bytes of the callables kept in the protected tree (``guarded`` patterns): they
    are part of identity (§3). A subject in the code under test is not: editing it is what
    a patch does, not a change of the relation."""
    out = {}
    for role, ref in relation.callables().items():
        module = ref.split(":", 1)[0].replace(".", "/")
        for candidate in (f"{module}.py", f"{module}/__init__.py"):
            if not protected(guarded, candidate):
                continue
            data = view.read_bytes(candidate)
            if data is not None:
                out[role] = data
                break
    return out


def _bind(review: Review) -> None:
    """Bind the touched paths (their git diff, when ``load_review`` started it, is ``_diff``)."""
    diff = review.__dict__.pop("_diff", None) or gitio.start_touched(review.repo, review.merge_base, review.head_sha)
    touched = diff.result()
    owners = review.catalog.owners if review.catalog else []
    review.bindings = bind(owners, touched, review.layout.protected)
    if review.catalog is None:  # no owner map: say "unknown", never a false gap
        review.bindings = [Binding(b.touched, UNKNOWN if b.state != PROTECTED else PROTECTED, None, ())
                           for b in review.bindings]


def _judging_layout(review: Review) -> Layout:
    """The base ref's layout, which the patch's flags and split are judged by even when the
    oracle is read from HEAD (a patch cannot move its own gate, §2)."""
    if review.oracle_from != "HEAD":
        return review.layout
    try:
        return layout_at(review.root, review.base_tip)
    except BadInputError:
        return review.layout  # the base's pyproject is broken: the review already reports its own


def _split(review: Review) -> None:
    """The §9 split check over ``merge_base..head``: offences in ``review.split``; a range git
    cannot read (a shallow clone's boundary) leaves the reason in ``split_problem`` (abort)."""
    try:
        review.split = check_split(review.root, f"{review.merge_base}..{review.head_sha}", _judging_layout(review))
    except (GitError, BadInputError) as exc:
        review.split_problem = exc.one_line()


def _flag(review: Review) -> None:
    """The §9 review flags of the commits under review (protected paths, leases, corpora,
    freeze rows, golden literals, sorts in bag relations, ingest turned concatenation),
    judged with the base ref's layout even when the oracle is read from HEAD."""
    corpora = {s.lease.path: s.lease.id for s in review.leases if s.lease is not None}
    cache = _parse_cache(review, "probes", PROBE_CACHE_ENTRIES)
    try:
        report = patch_flags(review.root, review.merge_base, review.head_sha, _judging_layout(review), review.catalog,
                             corpora, review.oracle_from, probe_cache=cache)
    finally:
        cache.flush()
    review.flags[:0] = report.flags
    review.unjudged = report.unjudged


def input_fields(review: Review, inp: dict) -> list[str] | None:
    if isinstance(inp.get("schema"), dict):
        return list(inp["schema"])
    if inp.get("lease"):
        status = review.lease(str(inp["lease"]))
        if status is None or status.lease is None:
            return None
        corpus = review.oracle_dir / status.lease.path
        opener = gzip.open if status.lease.path.endswith(".gz") else open
        try:
            with opener(corpus, "rt", encoding="utf-8", newline="") as handle:
                first = next((line for line in handle if line.strip()), "")
        except (OSError, EOFError):
            return None
        return header_fields(status.lease.path, first) or None
    if inp.get("seeds") and review.catalog:
        for relation in review.relations:
            if relation.seeds_path == inp["seeds"] and relation.input.get("schema"):
                return list(relation.input["schema"])
    return None


def input_shape(review: Review, inp: dict, view: gitio.TreeView | None = None) -> InputShape:
    """A candidate input's InputShape (``candidates.input_shape``), read from the oracle
    (``view``, default the review's oracle commit): the seeds file's rows (a path the oracle
    does not hold, ``..`` included, reads as missing), the lease corpus's header, and a
    catalog relation's schema for the same seeds file."""
    view = view or gitio.TreeView(review.repo, review.oracle_sha)
    seeds = inp.get("seeds")
    rows = None
    if isinstance(seeds, str):
        misplaced = seeds_path_problem(review.layout, seeds)
        if misplaced:
            return InputShape(None, problem=misplaced)
        if view.symlink_target(seeds) is None and view.exists(seeds):
            text = view.read_text(seeds) or ""
            bad = first_bad_jsonl_line(text)
            if bad is not None:
                return InputShape(None, problem=f"seeds file {seeds} line {bad[0]} is not JSON")
            rows = _seed_values(view, seeds)
    header = input_fields(review, {"lease": inp["lease"]}) if inp.get("lease") else None
    catalog_schema = review.catalog.seeds_schemas.get(seeds) if review.catalog and isinstance(seeds, str) else None
    return candidate_input_shape(inp, rows, header, catalog_schema)


def _load_quarantine(review: Review, view: gitio.TreeView) -> None:
    """Validate every quarantine file; without a catalog, say so on each item (fail closed)."""
    catalog = review.catalog or Catalog(review.layout.catalog, {}, [])
    no_catalog = "cannot be judged: the catalog did not load"
    listed = view.list_files(review.layout.quarantine_dir)
    texts = view.read_texts(listed)  # one git call for every quarantine file
    reads = _parse_cache(review, "candidate")  # file-only verdicts by blob id (issue 17)
    for path in listed:
        text = texts[path] or ""
        if path.endswith(SEEDS_SUFFIX):
            relation = catalog.get(path.rsplit("/", 1)[-1].removesuffix(SEEDS_SUFFIX))
            existing = _seed_values(view, relation.seeds_path) if relation and relation.seeds_path else []
            rows = validate_seed_rows(path, text, catalog, existing)
            for row in rows if review.catalog is None else ():
                row.reasons = [no_catalog]
            review.seed_rows.extend(rows)
        elif path.endswith((".yaml", ".yml")):
            read = reads.get(view.blob_id(path), path, lambda: read_candidate(path, text),
                             lambda kept: isinstance(kept, CandidateRead) and kept.judges(text))
            candidate = validate_candidate(path, text, catalog, lambda inp: input_shape(review, inp, view), read)
            if review.catalog is None:
                candidate.verdicts = [Verdict("unique_id", False, no_catalog) if v.rule == "unique_id" else v
                                      for v in candidate.verdicts]
                candidate.row = None
            candidate.notes.extend(_candidate_notes(review, candidate))
            review.candidates.append(candidate)
    reads.flush()


def _candidate_notes(review: Review, candidate: Candidate) -> list[str]:
    """What accepting would not fix: a lease that does not allow the new relation (§4)."""
    if candidate.row is None or not isinstance(candidate.row.get("input"), dict):
        return []
    lease_id = candidate.row["input"].get("lease")
    status = review.lease(str(lease_id)) if lease_id else None
    if status is None or status.lease is None:
        return [f"reads lease {lease_id!r}, which does not exist"] if lease_id else []
    notes = []
    if candidate.id not in status.lease.allowed_relations:
        notes.append(f"lease {lease_id} does not list {candidate.id} in allowed_relations: once "
                     "accepted it stays blocked until the lease owner adds it (a lease: commit)")
    if status.state not in ("ok", "expiring"):
        notes.append(f"lease {lease_id} is {status.state}: {status.reason}")
    return notes


def _seed_values(view: gitio.TreeView, path: str) -> list:
    values = []
    for line in jsonl_lines(view.read_text(path) or ""):
        try:
            values.append(jsonnumbers.loads(line))
        except json.JSONDecodeError:
            continue
    return values


def _patch_catalog(review: Review) -> None:
    """Relations whose identity the patch changes (§3): HEAD's catalog against the merge base's.

    The review still runs the oracle's relations; a changed identity is shown ("Δ changed
    in PR") and raised as a ``relation_changed`` flag on the last commit that changed what
    the identity covers (the catalog, or a callable's source in the protected tree), as is
    a patch catalog that does not load (when the patch touched it).
    """
    if review.merge_base == review.head_sha:
        return
    path = review.layout.catalog
    guarded = review.layout.protected
    if not any(f.name == "protected_path_changed" for f in review.flags) and not any(
            path in (b.path, b.touched.old_path) for b in review.bindings):
        return  # identity covers the catalog and protected callables only: none of them changed
    changed = {p for b in review.bindings for p in (b.path, b.touched.old_path) if p}
    if path not in changed and not _any_protected(guarded, [p for p in changed if p.endswith(".py")]):
        return  # protected files changed, but neither the catalog nor a module a callable can name
    head_view = gitio.TreeView(review.repo, review.head_sha)
    try:
        after = _catalog_identities(review, head_view, path, f"{path} (in {review.head_ref})", guarded)
    except BadInputError as exc:
        last = _last_commit(review, [path])
        if last is not None:
            review.flags.append(Flag("patch_catalog_invalid", last[0], path, exc.line, exc.one_line()))
        return
    try:
        before = _catalog_identities(review, gitio.TreeView(review.repo, review.merge_base), path,
                                     f"{path} (at the merge base)", guarded)
    except BadInputError:
        before = {}
    catalog = _collect(review, _cached_catalog, review, head_view, path, path) if after else None
    for rid in sorted(set(before) | set(after)):
        old, new = before.get(rid, ("-", None)), after.get(rid, ("-", None))
        if old[0] == new[0]:
            continue
        review.changed_identity.add(rid)
        what = "added" if rid not in before else "removed" if rid not in after else "changed"
        relation = catalog.get(rid) if catalog else None
        sources = [path] + (_protected_sources(relation, guarded) if relation else [])
        commit, where = _last_commit(review, sources) or (None, path)
        review.flags.append(Flag(
            "relation_changed", commit, where, new[1] if where == path else None,
            f"the patch {what} relation {rid} (identity {old[0][:19]} -> {new[0][:19]}); "
            "the review runs the oracle's version"))


def _any_protected(guarded: tuple[str, ...], paths: list[str]) -> bool:
    """Whether one of ``paths`` is protected (``owners.protected``), the patterns indexed
    once: a patch may change 100,000 modules."""
    guarded_path = protection(guarded)
    guarded_path.prime(paths)
    return any(map(guarded_path, paths))


def _protected_sources(relation: Relation, guarded: tuple[str, ...]) -> list[str]:
    """Files of the relation's callables that sit in the protected tree (part of identity)."""
    out = []
    for ref in relation.callables().values():
        module = ref.split(":", 1)[0].replace(".", "/")
        out += [p for p in (f"{module}.py", f"{module}/__init__.py") if protected(guarded, p)]
    return out


def _last_commit(review: Review, paths: list[str]) -> tuple[str, str] | None:
    """(sha, path) of the newest commit of the patch that changed one of ``paths``, or None."""
    out = gitio.run_git(review.root, "log", "-1", "--format=%H", "--name-only", "-z",
                        f"{review.merge_base}..{review.head_sha}", "--", *paths).stdout.decode("utf-8", "surrogateescape")
    fields = [f.strip("\n") for f in out.split("\0") if f.strip("\n")]
    if not fields:
        return None
    sha, _, first = fields[0].partition("\n")
    changed = [first] + fields[1:] if first else fields[1:]
    return sha, next((p for p in paths if p in changed), paths[0])


def _catalog_identities(review: Review, view: gitio.TreeView, path: str, source: str,
                        guarded: tuple[str, ...]) -> dict[str, tuple[str, int | None]]:
    """Relation id -> (identity, line) for the catalog in ``view`` ({} when it has none)."""
    catalog = _cached_catalog(review, view, path, source)
    if catalog is None:
        return {}
    return {r.id: (r.identity(_callable_sources(r, view, guarded)), r.line) for r in catalog.relations.values()}


# --- running -------------------------------------------------------------------------

def import_paths(layout: Layout, root: Path) -> list[str]:
    """Absolute import paths for subjects: configured, or the root plus ``src/`` (§3)."""
    if layout.import_paths is not None:
        return [str((root / p).resolve()) for p in layout.import_paths]
    paths = [str(root)]
    if (root / "src").is_dir():
        paths.append(str(root / "src"))
    return paths


def _fixture_pin(review: Review, relative: str, path: Path, digest=None) -> str:
    """sha256 of a relation's input at ``path`` in a run tree. A protected input is the
    oracle export's copy (same size and mtime: copytree keeps them) and is looked up by
    blob oid (through ``digest``, an ``_oracle_digest`` shared by the caller's plans, or
    a new one); anything else is streamed."""
    exported = review.oracle_dir / relative
    try:
        copied, original = os.stat(path), os.stat(exported)
        same = (copied.st_size, copied.st_mtime_ns) == (original.st_size, original.st_mtime_ns)
    except (OSError, ValueError):
        same = False
    if same and protected(review.layout.protected, relative):
        return (digest or _oracle_digest(review))(path, relative)
    return sha256_stream(path)


def _blocked(relation: Relation, why: str, freeze: FreezeRow | None) -> RelationResult:
    reason = "lease_not_usable" if relation.lease_id else "bad_seeds"
    return RelationResult(relation.id, "blocked",
                          Decision("reject", reason, None, relation.id, why),
                          f"blocked: {why}", freeze=freeze)


def sandboxed() -> bool:
    """Whether subjects will see their tree through bubblewrap's read-only mount here, so a
    run tree may hard-link the per-commit store's files (``treestore``) instead of copying."""
    from relconsole.engine.relations.subject.server import bwrap_path
    return bwrap_path() is not None


class RunCancelled(RelconsoleError):
    """``run_review`` was cancelled (the console quit): its runs were killed, nothing stored."""


def run_review(review: Review, relation_ids: list[str] | None = None,
               progress: Callable[[RelationResult], None] | None = None,
               workers: int | None = None, replay_seed: int | None = None,
               replay_hashseed: int | None = None, cancel: Cancel | None = None,
               meanwhile: Callable[[], None] | None = None) -> list[RelationResult]:
    """Evaluate relations (default: the touched ones) on HEAD's tree with the oracle overlaid.

    ``workers`` worker processes run them (default: one per core); ``replay_seed``: the
    recorded run seed every first run replays (None: each draws its own, §7), with
    ``replay_hashseed`` its recorded PYTHONHASHSEED (None: a new one). Results are stored
    in ``review.results`` and returned in the order asked. Blocked
    relations (a lease or seeds file that fails closed) are reported without running.
    ``cancel`` (another thread's ``Cancel``) kills the runs in flight and starts no more.
    Raises RelconsoleError when the catalog did not load, RunCancelled when cancelled
    (nothing stored). ``meanwhile`` runs on the calling thread while the workers judge (the
    tree and the plans are ready, git is no longer used); what it raises cancels the run
    and is raised once the workers stopped.
    """
    if review.catalog is None:
        raise RelconsoleError("the catalog did not load; fix it before running relations")
    ids = relation_ids if relation_ids is not None else review.touched_relations()
    scratch = scratch_dir("tmp")
    tree = scratch / checkout_name(review)  # the subject's working folder reads as a plain checkout
    try:
        linked = sandboxed()
        build_run_tree(review.repo, review.head_sha, review.oracle_dir, review.layout.protected, tree, link=linked)
        plans, results = [], {}
        digest = _oracle_digest(review)  # one listing of the oracle's directories for every plan
        for rid in ids:
            relation = review.catalog.get(rid)
            if relation is None:
                raise UsageError(f"no relation {rid!r} in the catalog")
            freeze = review.freeze_for(rid)
            why = review.blocked_reason(relation)
            if why:
                results[rid] = _blocked(relation, why, freeze)
                if progress:
                    progress(results[rid])
                continue
            plan = plan_for(review, relation, tree, digest, linked)
            if replay_seed is not None:
                plan = dataclasses.replace(plan, replay_seed=replay_seed, replay_hashseed=replay_hashseed)
            plans.append((plan, freeze))
        digest.flush()
        history = _durations(review)
        for result in _run_meanwhile(plans, progress, workers, history, cancel, meanwhile):
            results[result.relation_id] = result
        if cancel is not None and cancel.is_set():
            raise RunCancelled("the run was cancelled")
        _save_durations(review, history, results.values())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    review.results.update(results)
    _flag_imported(review, results.values())
    return [results[rid] for rid in ids]


def _run_meanwhile(plans, progress, workers, history, cancel: Cancel | None,
                   meanwhile: Callable[[], None] | None) -> list[RelationResult]:
    """``run_all`` on a helper thread while ``meanwhile`` runs here (without one: ``run_all``)."""
    if meanwhile is None:
        return run_all(plans, progress, workers, history, cancel)
    cancel = cancel or Cancel()
    box: dict = {}

    def judge() -> None:
        try:
            box["results"] = run_all(plans, progress, workers, history, cancel)
        except BaseException as exc:  # raised below, on the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=judge, name="relconsole-run", daemon=True)
    thread.start()
    try:
        meanwhile()
    except BaseException:
        cancel.cancel()
        raise
    finally:
        thread.join()
    if "error" in box:
        raise box["error"]
    return box["results"]


def _flag_imported(review: Review, results) -> None:
    """§9 as extended by issue 15: a touched file a run on HEAD imported is code, whatever its
    name: probes in a test-named module it imported are flagged like the subject's own."""
    imported = {path for r in results for record in (r.first, *r.reruns) if record is not None
                for path in (record.run or {}).get("imported") or []}
    touched = {b.path for b in review.bindings}
    judged = {(f.name, f.path) for f in review.flags}
    paths = sorted(p for p in imported & touched if not probed_by_name(p)
                   and ("environment_probe", p) not in judged and not protected(review.layout.protected, p))
    if paths and review.merge_base != review.head_sha:
        review.flags.extend(imported_probes(review.root, review.merge_base, review.head_sha, paths))
        if review.acks and review.flags:  # their ids too, while this is still a worker
            review.flag_id(review.flags[-1])


def _durations_file(review: Review) -> Path:
    return Path(review.repo.git_dir) / "relconsole" / "durations.json"


def _durations(review: Review) -> dict[str, float]:
    """Seconds each relation's first run took last time (for scheduling only)."""
    try:
        data = json.loads(_durations_file(review).read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))} if isinstance(data, dict) else {}


def _save_durations(review: Review, history: dict[str, float], results) -> None:
    """Remember this run's durations; a failure to write only loses a scheduling hint."""
    merged = dict(history)
    merged.update({r.relation_id: round(r.first.seconds, 3) for r in results if r.first is not None})
    path = _durations_file(review)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(".tmp")
        scratch.write_text(json.dumps(merged, sort_keys=True))
        os.replace(scratch, path)
    except OSError:
        pass


def plan_for(review: Review, relation: Relation, tree: Path, digest=None, linked: bool = False) -> RunPlan:
    """The RunPlan of ``relation`` on a materialised ``tree`` (its input read from that tree).

    ``digest``: an ``_oracle_digest(review)`` to share between many plans (it lists the
    oracle commit's directories once); by default each plan makes its own. ``linked``: the
    tree hard-links the per-commit store's files, so a subject must see it read-only: the
    run requires bubblewrap (a worker that finds none aborts) instead of falling back to a
    plain process that could write into the store through the links."""
    if relation.lease_id:
        lease = review.lease(relation.lease_id).lease
        kind, relative = "lease", lease.path
    else:
        kind, relative = "seeds", relation.seeds_path
    path = tree / relative
    clock = {"real": None, "frozen": review.layout.frozen_clock}.get(relation.clock, relation.clock)
    return RunPlan(relation, tree, import_paths(review.layout, tree), kind, path,
                   _fixture_pin(review, relative, path, digest), review.layout.relation_timeout_seconds, clock,
                   review.layout.protected, sandbox="bwrap" if review.layout.require_sandbox or linked else "auto",
                   clock_day=relation.clock == "frozen", clock_today=review.today.isoformat(),
                   checkout=checkout_name(review), readonly=reviewer_folders(review),
                   env={name: os.environ[name] for name in review.layout.pass_env if name in os.environ})


def reviewer_folders(review: Review) -> tuple[str, ...]:
    """The reviewer's own folders a subject must not write (SPEC §7): the git directory (its
    parse caches and the oracle export's store), the common one of a linked worktree, and the
    checkout. bwrap never shows them; a plain-process subject gets them read-only."""
    repo = review.repo
    folders = [repo.git_dir, getattr(repo, "common_dir", None), repo.working_tree_dir]
    return tuple(dict.fromkeys(str(f) for f in folders if f))


def checkout_name(review: Review) -> str:
    """The folder name the subject sees its tree under: the repository's own (SPEC §7: nothing
    in its working folder says it is being judged)."""
    name = Path(review.repo.working_tree_dir or review.repo.git_dir).resolve().name
    return name if name and not name.startswith(".") else "project"
