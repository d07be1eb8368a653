"""The merge checklist: seven questions a reviewer answers before merging, each from evidence.

``merge_checklist(review)`` returns one ``Item`` per question, in this order, each
``pass``, ``fail`` or ``unknown`` (the evidence is not there yet, e.g. relations not run)
with the evidence lines it was judged on:

1. ``leases_fresh``: every lease the touched relations read matches its hash and is unexpired (§4).
2. ``leases_allow``: every touched relation is allowed by the leases it reads (§4).
3. ``no_golden_literal``: the patch adds no assertion of a call result against a literal that
   blocks (§9; by default an expected answer edited together with the code it checks).
4. ``freezes_preexisting``: every freeze row in use was on the base ref before the patch and has a reason (§6).
5. ``freeze_reruns_counted``: every freeze in use had its reruns executed and counted (§6).
6. ``drafted_rows_decided``: every accepted drafted row the touched relations carry was accepted
   by a person other than its drafter (§10): the accepting commit's author is not the
   ``drafted_by`` its message records or, where none is recorded (drafted seed rows), not
   the author of the commit that put the draft in quarantine.
7. ``flags_acknowledged``: every acknowledgement in use (a review flag it clears, §9 ``review:``)
   is listed with who made it and why; one made by an author of the patch counts for
   nothing and fails the item.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from relconsole.engine.repo import gitio
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.gate.flags.acks import by_author, same_person
from relconsole.engine.oracle.seedrows import relation_of_seed_file
from relconsole.engine.gate.cireport import evidence_text
from relconsole.engine.decision import NOT_JUDGED, Decision
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.freezes import LIVE, parse_rows
from relconsole.engine.oracle.yamlload import load_yaml_text
from relconsole.engine.literal import counted

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
_ACCEPTED = re.compile(r"^Accepted (?:from quarantine: (?P<candidate>.+)|seed row (?P<seeds>.+?):(?P<line>\d+): )")
_PROVENANCE = re.compile(r"^  drafted_by: (.+)$")


@dataclass(frozen=True)
class Item:
    """One checklist question: ``key``, ``title``, ``state`` (pass/fail/unknown) and ``evidence`` lines."""

    key: str
    title: str
    state: str
    evidence: tuple[str, ...]

    def to_json(self) -> dict:
        return {"key": self.key, "title": self.title, "state": self.state, "evidence": list(self.evidence)}


def merge_checklist(review) -> list[Item]:
    """The seven items for ``review`` (an engine ``Review``); never raises for missing evidence.

    Only ``freeze_reruns_counted`` reads the relations' results; the other six are kept on the
    review while its bindings, flags, acknowledgements, leases, freezes and errors are the same
    objects (compared by identity), because the console asks after every finished relation and
    the drafted-rows item reads git history."""
    key = tuple(map(tuple, (review.bindings, review.flags, review.acks, review.leases, review.freezes,
                            review.errors)))
    cached = getattr(review, "_checklist_static", None)
    if cached is None or cached[0] != key:
        cached = (key, (_leases_fresh(review), _leases_allow(review), _no_golden(review),
                        _freezes_preexisting(review), _drafted_rows(review), _acknowledged(review)))
        review._checklist_static = cached
    fresh, allow, golden, preexisting, drafted, acknowledged = cached[1]
    return [fresh, allow, golden, preexisting, _reruns_counted(review), drafted, acknowledged]


def checklist_verdicts(items: list[Item]) -> list[Decision]:
    """One ``reject`` (reason ``checklist:<key>``) per failed item, its detail every evidence
    line (``evidence_text``); an unknown item fails nothing."""
    return [Decision("reject", f"checklist:{i.key}", None, None, evidence_text(i.evidence, i.title))
            for i in items if i.state == FAIL]


def _item(key: str, title: str, failures: list[str], passes: list[str], unknown: list[str] = ()) -> Item:
    state = FAIL if failures else UNKNOWN if unknown else PASS
    return Item(key, title, state, tuple(failures) + tuple(unknown) + tuple(passes))


def _lease_readers(review):
    """(relation, lease status or None) for every touched relation that reads a lease."""
    for rid in review.touched_relations():
        relation = review.catalog.get(rid)
        if relation.lease_id:
            yield relation, review.lease(relation.lease_id)


def _no_catalog(key: str, title: str) -> Item:
    return Item(key, title, UNKNOWN, ("the catalog did not load: no relation can be judged",))


def _leases_fresh(review) -> Item:
    key, title = "leases_fresh", "every lease the touched relations read matches its hash and is unexpired"
    if review.catalog is None:
        return _no_catalog(key, title)
    bad, good, seen = [], [], set()
    for relation, status in _lease_readers(review):
        lease_id = relation.lease_id
        if lease_id in seen:
            continue
        seen.add(lease_id)
        if status is None or status.lease is None:
            bad.append(f"lease {lease_id} (read by {relation.id}) does not exist or is invalid")
        elif status.state in ("ok", "expiring"):
            good.append(f"lease {lease_id}: {status.state}, sha256 matches, expires {status.lease.expires}")
        else:
            bad.append(f"lease {lease_id}: {status.state}: {status.reason}")
    if not seen:
        good.append("no touched relation reads a lease")
    return _item(key, title, bad, good)


def _leases_allow(review) -> Item:
    key, title = "leases_allow", "every touched relation is allowed by the leases it reads"
    if review.catalog is None:
        return _no_catalog(key, title)
    bad, good = [], []
    for relation, status in _lease_readers(review):
        if status is None or status.lease is None:
            bad.append(f"{relation.id} reads lease {relation.lease_id}, which does not load")
        elif relation.id in status.lease.allowed_relations:
            good.append(f"lease {relation.lease_id} allows {relation.id}")
        else:
            bad.append(f"lease {relation.lease_id} does not list {relation.id} in allowed_relations")
    if not bad and not good:
        good.append("no touched relation reads a lease")
    return _item(key, title, bad, good)


def _no_golden(review) -> Item:
    """Fails on a standing ``golden_literal`` flag (level ``block``, not acknowledged); the
    warned ones (a new assertion, by default) are listed as evidence of a passing item."""
    key, title = "no_golden_literal", "the patch adds no golden literal that blocks"
    flags = [f for f in review.flags if f.name == "golden_literal"]
    golden = [f"{f.where()}: {f.detail}" for f in flags if review.standing(f)]
    cleared = [f"{f.where()}: acknowledged by {review.acknowledgement(f).by}" for f in flags
               if review.acknowledgement(f) is not None]
    warned = [f"{f.where()} ({review.flag_level(f)}): {f.detail}" for f in flags
              if not review.standing(f) and review.acknowledgement(f) is None]
    span = f"{review.merge_base[:10]}..{review.head_sha[:10]}"
    unread = [f"not judged: {note}" for note in review.unjudged]
    return _item(key, title, golden, cleared + warned if golden or unread or cleared or warned else
                 [f"no assertion of a call result against a literal in {span}"], unread)


def _base_rows(review) -> set[str] | None:
    """Canonical text of the freeze rows on the base ref's tip (None: unreadable)."""
    text = TreeView(review.repo, review.base_tip).read_text(review.layout.freezes)
    try:
        return {json.dumps(row, sort_keys=True) for row, _ in parse_rows(text, review.layout.freezes)}
    except BadInputError:
        return None


def _freeze_file_unread(review) -> list[str]:
    """Why the freeze file cannot be judged (it did not load), or []."""
    return [f"{e.one_line()}: the freeze rows in use are not known" for e in review.errors
            if e.path == review.layout.freezes]


def _freeze_item_without_rows(review, key: str, title: str, rows) -> Item | None:
    """The freeze items' answer when there is nothing to judge row by row: no catalog
    (unknown), a freeze file that did not load (unknown), no row in use (pass), else None."""
    if review.catalog is None:
        return _no_catalog(key, title)
    if _freeze_file_unread(review):
        return _item(key, title, [], [], _freeze_file_unread(review))
    if not rows:
        return _item(key, title, [], ["no live freeze row applies to a touched relation"])
    return None


def _in_use(review):
    """Live freeze rows of touched relations (the ones the freeze protocol applies)."""
    if review.catalog is None:
        return []
    touched = set(review.touched_relations())
    return [row for row in review.freezes if row.state == LIVE and row.relation_id in touched]


def _freezes_preexisting(review) -> Item:
    key, title = "freezes_preexisting", "every freeze row in use was on the base before the patch and has a reason"
    rows = _in_use(review)
    early = _freeze_item_without_rows(review, key, title, rows)
    if early is not None:
        return early
    base = _base_rows(review)
    if base is None:
        return _item(key, title, [], [], [f"{review.layout.freezes} on {review.base_ref} does not load"])
    bad, good = [], []
    for row in rows:
        where = f"{review.layout.freezes}:{row.line or '?'} ({row.relation_id})"
        reason = str(row.raw.get("reason") or "").strip()
        if json.dumps(row.raw, sort_keys=True) not in base:
            bad.append(f"{where}: not on {review.base_ref}; the patch brought it")
        elif not reason:
            bad.append(f"{where}: no reason")
        else:
            good.append(f"{where}: on {review.base_ref}@{review.base_tip[:8]}, reason: {reason}")
    return _item(key, title, bad, good)


def _reruns_counted(review) -> Item:
    key, title = "freeze_reruns_counted", "every freeze in use had its reruns executed and counted"
    rows = _in_use(review)
    early = _freeze_item_without_rows(review, key, title, rows)
    if early is not None:
        return early
    bad, good, unknown = [], [], []
    for row in rows:
        result = review.results.get(row.relation_id)
        if result is None or result.first is None:
            unknown.append(f"{row.relation_id}: not run in this review (relconsole flags --run, or r in the console)")
        elif result.first.held:
            good.append(f"{row.relation_id}: the first run held; the freeze was not needed")
        elif result.outcome in ("vacuous", "blocked") or (result.verdict.reason in NOT_JUDGED and not result.reruns):
            # the run judged nothing, so the freeze protocol never started: its own verdict decides
            unknown.append(f"{row.relation_id}: {result.outcome}, not judged ({result.verdict.reason}): "
                           "no rerun was due")
        elif len(result.reruns) == row.reruns:
            good.append(f"{row.relation_id}: {len(result.reruns)} of {counted(row.reruns, 'rerun')} executed, "
                        f"{result.rerun_passes} passed (needed {row.pass_needed})")
        else:
            bad.append(f"{row.relation_id}: {counted(len(result.reruns), 'rerun')} recorded, the freeze asks for {row.reruns}")
    return _item(key, title, bad, good, unknown)


def _drafted_rows(review) -> Item:
    key, title = "drafted_rows_decided", "every accepted drafted row was decided by a person, not its drafter"
    if review.catalog is None:
        return _no_catalog(key, title)
    touched = set(review.touched_relations())
    bad, good, unknown = [], [], []
    for accept in _accepting_commits(review):
        if not touched & accept.relations:
            continue
        drafters = _drafters(review, accept)
        who = f"{accept.author_name} <{accept.author_email}>"
        names = ", ".join(sorted(accept.relations & touched))
        if any(same_person(d, accept.author_name, accept.author_email) for d in drafters):
            bad.append(f"{accept.sha[:10]} accepted {names} by {who}, who drafted it")
        elif not drafters:
            unknown.append(f"{accept.sha[:10]} accepted {names}: {who}; the drafter is not recorded")
        else:
            good.append(f"{accept.sha[:10]} accepted {names}: {who}; drafted by {', '.join(sorted(drafters))}")
    if not bad and not good and not unknown:
        good.append("no touched relation carries a row accepted from quarantine")
    return _item(key, title, bad, good, unknown)


@dataclass
class _Accept:
    sha: str
    author_name: str
    author_email: str
    relations: set
    drafters: set
    quarantine_paths: list
    seed_lines: list  # (quarantine seeds file, 1-based line) of each accepted seed row


def _accepting_commits(review) -> list[_Accept]:
    """``catalog:`` commits on the oracle's history that accepted drafts (their message
    names each quarantine file and its provenance, as ``actions.accept`` writes it)."""
    layout = review.layout
    out = gitio.run_git(review.root, "log", "-z", "--format=%H%x1f%an%x1f%ae%x1f%B", "--grep=^Accepted ",
                        review.oracle_sha, "--", layout.catalog, layout.seeds_dir).stdout
    accepts = []
    for record in out.decode("utf-8", "replace").split("\0"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) != 4:
            continue
        sha, name, email, body = parts
        accept = _Accept(sha, name, email, set(), set(), [], [])
        for line in body.splitlines():
            match = _ACCEPTED.match(line)
            if match and match["seeds"]:
                accept.seed_lines.append((match["seeds"], int(match["line"])))
                accept.relations.add(relation_of_seed_file(match["seeds"]))
            elif match:
                accept.quarantine_paths.append(match["candidate"])
                accept.relations.add(_candidate_id(review, sha, match["candidate"]))
            drafted = _PROVENANCE.match(line)
            if drafted:
                accept.drafters.add(drafted.group(1).strip())
        accept.relations.discard(None)
        accepts.append(accept)
    return accepts


def _candidate_id(review, accepting_sha: str, path: str) -> str | None:
    """The id of the candidate file ``path`` as it was just before it was accepted."""
    text = gitio.run_git(review.root, "show", f"{accepting_sha}^:{path}", ok=None).stdout.decode("utf-8", "replace")
    try:
        data = load_yaml_text(text, path).data
    except BadInputError:
        return None
    return str(data.get("id")) if isinstance(data, dict) and data.get("id") else None


def _drafters(review, accept: _Accept) -> set[str]:
    """Who drafted what the commit accepted: each candidate's recorded ``drafted_by`` (else
    whoever added its file to quarantine), and whoever wrote each seed row's line (``git blame``)."""
    authors = set(accept.drafters)
    if not accept.drafters:
        authors |= _candidate_adders(review, accept)
    for path, line in accept.seed_lines:
        out = gitio.run_git(review.root, "blame", "--porcelain", "-L", f"{line},{line}", f"{accept.sha}^", "--",
                            path, ok=None).stdout.decode("utf-8", "replace")
        name = re.search(r"^author (.*)$", out, re.M)
        mail = re.search(r"^author-mail <(.*)>$", out, re.M)
        if name and mail:
            authors.add(f"{name.group(1)} <{mail.group(1)}>")
    return authors


def _candidate_adders(review, accept: _Accept) -> set[str]:
    """Authors of the commits that added the accepted candidate files to quarantine."""
    authors = set()
    for path in accept.quarantine_paths:
        out = gitio.run_git(review.root, "log", "--diff-filter=A", "-1", "--format=%an <%ae>",
                            f"{accept.sha}^", "--", path, ok=None).stdout.decode("utf-8", "replace").strip()
        if out:
            authors.add(out)
    return authors




def _acknowledged(review) -> Item:
    title = "every acknowledged review flag was acknowledged by someone who is not the patch's author"
    passes, failures = [], []
    for flag in review.flags:
        ack = review.matching_ack(flag)
        if ack is None:
            continue
        line = f"{flag.name} at {flag.where()}: acknowledged by {ack.by} ({ack.raw.get('date', '?')}): {ack.reason}"
        if by_author(ack, review.authors):
            failures.append(f"void, made by an author of the patch: {line}")
        else:
            passes.append(line)
    return _item("flags_acknowledged", title, failures, passes or ["no acknowledgement in use"])
