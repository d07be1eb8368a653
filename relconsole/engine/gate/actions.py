"""What a reviewer does to the oracle: accept, delete, renew, freeze, acknowledge (SPEC §4, §6, §9, §10).

Each action re-reads the files it changes from the oracle branch's current tip, checks
the rule it implements, and makes exactly one commit of one kind through
``commits.commit_changes`` (a temporary index; the user's work is never touched). A
``catalog:`` commit is written only when every relation it adds or changes holds on the tree
it would have (``holdcommits.check_commit``): the one place every catalog commit passes.
What an accept's commit says of the second replay is in ``acceptnote``, the replay evidence
a freeze rests on in ``freezeevidence``; the owner patterns an accept leaves to add, in
``ownerhints``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Collection

from relconsole.engine.oracle import textedit
from relconsole.engine.gate.flags.acks import MIN_PREFIX, flagged_content, range_authors, same_person, with_ack
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.repo.commitkinds import FileChange
from relconsole.engine.repo.commits import CommitResult, commit_changes
from relconsole.engine.errors import BadInputError, CommitRefused, UsageError, did_you_mean
from relconsole.engine.oracle.freezes import check_new_row
from relconsole.engine.repo.gitio import resolve
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.identity import git_identity
from relconsole.engine.oracle.leases import check_renewal
from relconsole.engine.oracle.rehash import rehash_preview
from relconsole.engine.literal import counted, one_line
from relconsole.engine.gate.blobreader import BlobReader
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.seeds import seed_file_problem
from relconsole.engine.gate.acceptnote import replay_note
from relconsole.engine.gate.freezeevidence import replay_freeze_fields
from relconsole.engine.gate.holdcommits import check_commit

OVERRIDE = "_override"  # a proposed row's note for the commit message; never written to the file


def tip_view(review: Review) -> TreeView:
    """The tree at the tip of the branch ``review`` commits to (the oracle branch), read afresh."""
    return TreeView(review.repo, resolve(review.repo, review.commit_branch()))


def _commit(review: Review, kind: str, subject: str, changes: list[FileChange], body: str = "") -> CommitResult:
    if kind == "catalog":  # a relation that misses on its own commit would blame every later patch (§8)
        notes = check_commit(review, review.commit_branch(), changes)
        if notes:
            body = before_trailers(body, "Relations not shown to hold before this commit:\n"
                                         + "".join(f"  {note}\n" for note in notes))
    real = dt.date.today()
    if review.today != real:  # an injected "today" moves every limit: the history must say so
        body = before_trailers(body, f"Judged as of {review.today.isoformat()} (--today / RELCONSOLE_TODAY); "
                                     f"the real date was {real.isoformat()}.\n")
    return commit_changes(review.repo, review.commit_branch(), kind, subject, changes, body,
                          layout=review.layout)


_TRAILER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*: \S.*")


def before_trailers(body: str, paragraph: str) -> str:
    """``body`` with ``paragraph`` added as the last paragraph before its trailer block.

    git reads trailers (``Confirmed-by: Name <email>``) only from the message's last
    paragraph, so a note appended after them would hide them from ``git interpret-trailers``.
    A body whose last paragraph is not all ``Key: value`` lines gets the note at its end.
    """
    paragraph = paragraph.rstrip("\n") + "\n"
    blocks = body.rstrip("\n").split("\n\n")
    last = blocks[-1].splitlines() if body.strip() else []
    if last and all(_TRAILER.fullmatch(line) for line in last):
        return "\n\n".join(blocks[:-1] + [paragraph.rstrip("\n"), blocks[-1]]) + "\n"
    return body + ("\n" if body and not body.endswith("\n\n") and body.strip() else "") + paragraph


def accept(review: Review, candidate_ids: list[str] = (), row_keys: list[str] = (),
           unconfirmed_ok: Collection[str] = ()) -> CommitResult:
    """Accept candidates and drafted seed rows together: one ``catalog:`` commit (§9, §10).

    Candidates are appended to the catalog in catalog form (every other byte kept) and
    their files removed; seed rows are appended to their relations' seeds files and
    removed from quarantine (a file with no row left is removed). A candidate must be
    ``confirmed`` by a second replay (§10, ``engine.gate.confirm``) unless its id or path is in
    ``unconfirmed_ok`` (the reviewer's recorded override: the commit message says so and
    who overrode). Raises CommitRefused when any chosen item is rejected, unconfirmed
    without override, discarded, or changed on the branch since it was replayed;
    UsageError for unknown items.
    """
    candidates = [_candidate(review, cid) for cid in candidate_ids]
    rows = _rows(review, list(row_keys)) if row_keys else []
    if not candidates and not rows:
        raise UsageError("nothing to accept")
    for candidate in candidates:
        if not candidate.valid or candidate.row is None:
            raise CommitRefused(f"{candidate.id} is rejected: {'; '.join(candidate.reasons)}")
    for row in rows:
        if not row.valid:
            raise CommitRefused(f"row {row.key} is rejected: {'; '.join(row.reasons)}")
    view = tip_view(review)
    notes = [replay_note(review, view, c, c.id in unconfirmed_ok or c.path in unconfirmed_ok)
             for c in candidates]
    changes: list[FileChange] = []
    if candidates:
        changes += _catalog_with(view, review.layout.catalog, candidates)
    changes += _seeds_with(review, view, rows) + _shrink_quarantine(view, rows)
    _refuse_unloadable(review, view, changes, candidates)
    names = [one_line(c.id) for c in candidates] + ([f"{counted(len(rows), 'seed row')} for "
                                                    + ", ".join(sorted({one_line(r.relation_id) for r in rows}))]
                                                   if rows else [])
    body = "".join(f"Accepted from quarantine: {one_line(c.path)}\n" + "".join(
        f"  {one_line(k)}: {one_line(v)}\n" for k, v in c.provenance().items() if v) + f"  {one_line(note)}\n"
        for c, note in zip(candidates, notes))
    body += "".join(f"Accepted seed row {one_line(r.key)}: {one_line(r.text)}\n" for r in rows)
    return _commit(review, "catalog", "accept " + "; ".join(names), changes, body)


def _refuse_unloadable(review: Review, view: TreeView, changes: list[FileChange], candidates) -> None:
    """Raise CommitRefused when an accepted relation's seeds would not load under its schema
    once the commit lands: every later command would then exit 5 and blame a seeds file
    nobody changed."""
    written = {c.path: c.content for c in changes}

    def text(path: str) -> str | None:
        if path not in written:
            return view.read_text(path)
        return None if written[path] is None else written[path].decode("utf-8", "replace")
    if not candidates:
        return
    catalog = load_catalog(text(review.layout.catalog) or "", review.layout.catalog)
    for candidate in candidates:
        relation = catalog.get(candidate.id)
        path = relation.seeds_path if relation is not None else None
        if not path:
            continue
        seeds = text(path)
        problem = (seed_file_problem(seeds, path, relation) if seeds is not None
                   else BadInputError(path, "the seeds file is absent"))
        if problem is not None:
            raise CommitRefused(f"{candidate.id}: its seeds would not load under its input schema once "
                                f"accepted ({problem.one_line()}); fix the candidate's schema or its seeds first")


def _catalog_with(view: TreeView, path: str, candidates) -> list[FileChange]:
    text = view.read_text(path) or ""
    for candidate in candidates:
        text = textedit.append_catalog_relation(text, candidate.row, path)
    load_catalog(text, path)  # the result must still be a valid catalog
    return [FileChange(path, text.encode())] + [FileChange(c.path, None) for c in candidates]


def _seeds_with(review: Review, view: TreeView, rows) -> list[FileChange]:
    changes = []
    for relation_id in sorted({r.relation_id for r in rows}):
        seeds = review.catalog.get(relation_id).seeds_path
        values = [json.loads(r.text) for r in rows if r.relation_id == relation_id]
        changes.append(FileChange(seeds, textedit.append_jsonl_rows(view.read_text(seeds) or "", values).encode()))
    return changes


def delete(review: Review, candidate_ids: list[str] = (), row_keys: list[str] = ()) -> CommitResult:
    """Remove candidates and drafted seed rows from quarantine: one ``quarantine:`` commit."""
    candidates = [_candidate(review, cid) for cid in candidate_ids]
    rows = _rows(review, list(row_keys)) if row_keys else []
    if not candidates and not rows:
        raise UsageError("nothing to delete")
    changes = [FileChange(c.path, None) for c in candidates]
    changes += _shrink_quarantine(tip_view(review), rows)
    names = [one_line(c.id) for c in candidates] + ([f"{counted(len(rows), 'drafted seed row')} for "
                                                    + ", ".join(sorted({one_line(r.relation_id) for r in rows}))]
                                                   if rows else [])
    body = "".join(f"{one_line(c.path)}: {one_line('; '.join(c.reasons) or 'deleted by reviewer')}\n"
                   for c in candidates)
    body += "".join(f"{one_line(r.key)}: {one_line('; '.join(r.reasons) or 'deleted by reviewer')}\n" for r in rows)
    return _commit(review, "quarantine", "delete " + "; ".join(names), changes, body)


def _candidate(review: Review, candidate_id: str):
    for candidate in review.candidates:
        if candidate.id == candidate_id or candidate.path == candidate_id:
            return candidate
    known = [c.id for c in review.candidates]
    raise UsageError(f"no candidate {candidate_id!r} in quarantine{did_you_mean(candidate_id, known)}")


def _rows(review: Review, keys: list[str]):
    """The drafted seed rows ``keys`` name (stable ids, or PATH:LINE as they are now)."""
    chosen = [r for r in review.seed_rows if any(r.named_by(k) for k in keys)]
    missing = [k for k in keys if not any(r.named_by(k) for r in chosen)]
    if missing:
        hint = did_you_mean(missing[0], [r.id for r in review.seed_rows])
        raise UsageError(f"no drafted seed row {missing[0]!r}{hint} (relconsole validate lists their ids)")
    return chosen


def _shrink_quarantine(view: TreeView, rows) -> list[FileChange]:
    """The quarantine files without ``rows``; a file with no row left is removed (§10)."""
    changes = []
    for path in sorted({r.path for r in rows}):
        text = view.read_text(path)
        if text is None:
            raise CommitRefused(f"{path} is gone from the oracle branch; reload the review")
        lines = textedit.jsonl_lines(text)
        mine = {r.line for r in rows if r.path == path}
        for row in rows:
            if row.path == path and (row.line > len(lines) or lines[row.line - 1] != row.text):
                raise CommitRefused(f"{path} changed since the review loaded; reload the review")
        rest = textedit.remove_jsonl_lines(text, mine)
        changes.append(FileChange(path, rest.encode() if rest.strip() else None))
    return changes


def renew_lease(review: Review, lease_id: str, until: dt.date) -> CommitResult:
    """Move a lease's expiry to ``until`` (§4): owner only, at most the configured maximum.

    One ``lease:`` commit with only that manifest; ``sha256`` is untouched. Raises
    CommitRefused with the reason otherwise.
    """
    status = review.lease_to_change(lease_id)
    who = git_identity(review.root)
    check_renewal(status, who.name, who.email, until, review.today, review.layout.renew_max_days)
    path = status.source
    old = tip_view(review).read_text(path)
    if old is None:
        raise CommitRefused(f"{path} is gone from the oracle branch; reload the review")
    new = textedit.set_lease_expires(old, until, path)
    return _commit(review, "lease", f"renew {one_line(lease_id)} until {until.isoformat()}",
                   [FileChange(path, new.encode())],
                   f"Expiry {status.lease.expires.isoformat()} -> {until.isoformat()}, "
                   f"renewed by {one_line(who.email or who.name)}.\n")


def rehash_lease(review: Review, lease_id: str, confirmed_digest: str) -> CommitResult:
    """Re-pin a drifted lease to its corpus as committed on the oracle branch (§4, §9).

    Recomputes ``rehash.rehash_preview`` and refuses (CommitRefused, with the reason)
    when it refuses (not drifted, not an owner, a working tree copy that is not the
    committed bytes), when ``confirmed_digest`` (what the confirmation screen showed and
    the user confirmed; case and surrounding space ignored) is not the digest computed
    now (the corpus changed since), or when the oracle branch moved since the preview was
    read. Writes only the manifest's ``sha256`` (``textedit.set_lease_sha256``, every other
    byte kept) in one ``lease:`` commit whose message records both digests, the corpus
    size, its modification time and ``Confirmed-by: Name <email>``. Raises UsageError for
    an unknown lease.
    """
    preview = rehash_preview(review, lease_id)
    if preview.refusal:
        raise CommitRefused(preview.refusal)
    confirmed = (confirmed_digest or "").strip().lower()
    if len(confirmed) != 64:
        raise CommitRefused(f"confirm with the whole new digest (64 hex characters), not "
                            f"{confirmed[:16] or '(nothing)'}: it is {preview.new_sha256}")
    if confirmed != preview.new_sha256:
        raise CommitRefused(
            f"the confirmed digest {confirmed[:12]}… is not the corpus's digest now "
            f"({preview.new_sha256[:12]}…): mistyped, or {preview.corpus} changed since the preview; "
            "look at the new preview and confirm again")
    old_text = TreeView(review.repo, preview.commit).read_text(preview.manifest)
    new_text = textedit.set_lease_sha256(old_text, preview.new_sha256, preview.manifest)
    if resolve(review.repo, preview.branch) != preview.commit:
        raise CommitRefused(f"{preview.branch} moved while the corpus was hashed; look at the new preview "
                            "and confirm again")
    old, new = preview.old_sha256, preview.new_sha256
    when = (f"{preview.mtime.isoformat(timespec='seconds')} (working tree file)" if preview.mtime else
            "not known: the checked-out tree holds other bytes" if preview.note else "no working tree copy")
    last = preview.corpus_commit
    body = (f"Old sha256: {old}\nNew sha256: {new}\n"
            f"Corpus: {one_line(preview.corpus)}, {preview.size_bytes} bytes, as committed in "
            f"{preview.commit} (blob {preview.blob})\nModified: {when}\n"
            + (f"Last changed by: {one_line(last.author_name)} <{one_line(last.author_email)}> in {last.sha} at "
               f"{last.committed.isoformat()}\n" if last else "")
            + f"\nConfirmed-by: {one_line(preview.confirmer)}\n")
    return _commit(review, "lease", f"re-hash {one_line(lease_id)} ({old[:12]}… -> {new[:12]}…)",
                   [FileChange(preview.manifest, new_text.encode())], body)


def proposed_freeze(review: Review, relation_id: str, reason: str = "",
                    expires: dt.date | None = None, without_replay: bool = False) -> dict:
    """The freeze row the console proposes for a missed relation (§6, §8 row 8 fields).

    The table decides (§8): the relation's replay sheet for HEAD (this review's, else the
    one in the default artifacts directory, fenced in its lease store) must say
    ``freeze``. Any other decision is refused; no sheet at all is refused unless
    ``without_replay`` (an operator's override, recorded in the row's commit message).
    Expiry defaults to the policy's ``max_days`` from today (never past the sheet's
    ``expires_at``); reruns to its ``min_reruns``. Raises CommitRefused or UsageError.
    """
    relation = review.catalog.get(relation_id) if review.catalog else None
    result = review.results.get(relation_id)
    if relation is None:
        hint = did_you_mean(relation_id, review.catalog.relations if review.catalog else ())
        raise UsageError(f"no relation {relation_id!r} in the catalog{hint}")
    if not relation.freeze.allowed:
        raise CommitRefused(f"{relation_id} does not allow freezing (its catalog entry has no freeze policy)")
    if result is None:
        raise UsageError(f"{relation_id} has not run yet: run it first")
    if result.outcome != "missed":
        raise UsageError(f"{relation_id} {result.outcome}: there is no miss to freeze")
    policy = relation.freeze
    carried = replay_freeze_fields(review, relation_id, without_replay)
    default_expiry = review.today + dt.timedelta(days=policy.max_days)
    if carried.get("expires_at"):
        default_expiry = min(default_expiry, dt.date.fromisoformat(carried["expires_at"]))
    expires = expires or default_expiry
    who = git_identity(review.root)
    return {"relation_id": relation_id, "expires": expires.isoformat(),
            "reruns": max(policy.min_reruns, 1), "pass_needed": max(policy.min_reruns, 1),
            "reason": reason, "lease_id": carried.get("lease_id") or relation.lease_id or "",
            "signature": carried.get("signature") or result.signature or "",
            "test_id": carried.get("test_id") or relation_id,
            "created_by": who.email or who.name, "created_at": review.today.isoformat(),
            **({OVERRIDE: carried["override"]} if "override" in carried else {})}


def find_flag(review: Review, flag_id: str):
    """The review flag whose id (``Review.flag_id``) is ``flag_id`` or starts with it (at least
    ``acks.MIN_PREFIX`` characters). Raises UsageError for none, or a prefix two flags share."""
    wanted = flag_id.strip().lower()
    if len(wanted) < MIN_PREFIX:
        raise UsageError(f"a flag id has at least {MIN_PREFIX} characters, not {flag_id!r} "
                         "(relconsole flags lists them)")
    found = {review.flag_id(f): f for f in review.flags if review.flag_id(f).startswith(wanted)}
    if len(found) != 1:
        raise UsageError(f"{'no' if not found else 'more than one'} review flag {flag_id!r} in "
                         f"{review.merge_base[:10]}..{review.head_sha[:10]} (relconsole flags lists them)")
    return next(iter(found.values()))


def acknowledge(review: Review, flag_id: str, reason: str) -> CommitResult:
    """Acknowledge one review flag (§9): one ``review:`` commit adding its fingerprint, who and
    why to the acks file on the oracle branch. The flag then no longer rejects a review, on any
    commit, until the content it cleared changes (``acks.flagged_content``).

    Raises UsageError (no such flag, an empty reason), CommitRefused when the git identity is
    an author of a commit under review (an agent's acknowledgement of its own flags counts for
    nothing) or has none, BadInputError for a malformed acks file on the branch.
    """
    if not reason.strip():
        raise UsageError("an acknowledgement needs a reason: what you checked in the flagged code")
    flag = find_flag(review, flag_id)
    me = git_identity(review.root)
    if any(same_person(f"{me.name} <{me.email}>", name, email) for name, email in review.authors
           or range_authors(review.root, review.merge_base, review.head_sha)):
        raise CommitRefused(f"{me.name} <{me.email}> wrote a commit under review: an acknowledgement by the "
                            "patch's own author counts for nothing (ask another reviewer)")
    path = review.layout.acks
    row = {"id": review.flag_id(flag), "flag": flag.name, "commit": flag.commit, "path": flag.path,
           "line": flag.line, "text": flagged_line(review, flag), "by": f"{me.name} <{me.email}>",
           "reason": reason.strip(), "date": review.today.isoformat()}
    new = with_ack(tip_view(review).read_text(path), row, path)
    return _commit(review, "review", f"acknowledge {one_line(flag.name)} at {one_line(flag.where())}",
                   [FileChange(path, new.encode("utf-8"))],
                   f"Reason: {one_line(reason.strip())}\nFlag: {one_line(row['id'])}\n")


def flagged_line(review: Review, flag) -> str:
    """The content the acknowledgement clears, as the flag's fingerprint reads it
    (``acks.flagged_content``: the enclosing definition and the whole statement, or the blob)."""
    with BlobReader(review.root) as reader:
        return flagged_content(reader, flag, review.head_sha)


def commit_freeze(review: Review, row: dict) -> CommitResult:
    """Write a proposed freeze row (replacing that relation's row): one ``freeze:`` commit.

    Raises CommitRefused when the row breaks the relation's freeze policy (§6).
    """
    row = dict(row)
    override = row.pop(OVERRIDE, "")
    problem = check_new_row(row, review.catalog, review.today)
    if problem:
        raise CommitRefused(f"freeze for {row.get('relation_id')}: {problem}")
    path = review.layout.freezes
    old = tip_view(review).read_text(path)
    try:
        new = textedit.upsert_freeze_row(old, row, path)
    except BadInputError:
        raise
    return _commit(review, "freeze", f"freeze {one_line(row['relation_id'])} until {one_line(row['expires'])}",
                   [FileChange(path, new.encode())],
                   f"Reason: {one_line(row['reason'])}\nSignature: {one_line(row['signature'])}\n"
                   + (f"Override: {one_line(override)}\n" if override else ""))
