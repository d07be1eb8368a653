"""The quarantine files of ``propose`` on the oracle branch (SPEC §9, §10): where a drafted
candidate or seed row goes, the branch tip's checks (a real directory, a seeds file that reads
back as JSON lines) and the one ``quarantine:`` commit of the drafts.

Drafts go onto the oracle branch as a quarantine: commit built on a temporary index
(commits.commit_changes), never through the working tree, which is the agent's branch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relconsole.engine.errors import BadInputError
from relconsole.engine.gate.review import Review
from relconsole.engine.literal import one_line
from relconsole.engine.oracle.candidateids import id_key
from relconsole.engine.oracle.seedrows import SEEDS_SUFFIX
from relconsole.engine.oracle.textedit import first_bad_jsonl_line
from relconsole.engine.oracle.yamlload import MAX_FILE_BYTES
from relconsole.engine.repo import gitio
from relconsole.engine.repo.treeview import TreeView

if TYPE_CHECKING:  # `relconsole run` builds every command's parser: commits load when a draft is committed
    from relconsole.engine.repo.commits import CommitResult

SEEDS_FILE_LIMIT_BYTES = MAX_FILE_BYTES  # an existing quarantine seeds file larger than this is refused
_NOT_REAL_DIR = "propose writes only into a real directory of the oracle branch"


def oracle_tip(review: Review) -> tuple[str, TreeView]:
    """(branch, view of its tip): the oracle branch (``Review.commit_branch``, §9) that
    drafts are committed onto, as it is now. Raises CommitRefused (exit 64) when the review's
    base is not a local branch and no ``oracle_branch`` is configured."""
    branch = review.commit_branch()
    return branch, TreeView(review.repo, gitio.resolve(review.repo, branch))


def check_tip_directory(view: TreeView, directory: str, branch: str) -> None:
    """Refuse a quarantine directory that the branch holds, or holds a parent of, as a file
    or a symlink: BadInputError (exit 5) naming that path."""
    parts = directory.strip("/").split("/")
    for number in range(1, len(parts) + 1):
        shown = "/".join(parts[:number])
        if view.symlink_target(shown) is not None:
            raise BadInputError(shown, f"is a symlink on {branch}; {_NOT_REAL_DIR}")
        if view.exists(shown):
            raise BadInputError(shown, f"is a file on {branch}, not a directory; {_NOT_REAL_DIR}")


def tip_seeds_text(review: Review, relation_id: str, view: TreeView, branch: str) -> str | None:
    """The oracle branch's quarantine seeds file of ``relation_id`` as text, or None when the
    branch has none.

    Raises BadInputError (exit 5) naming the file when it is a symlink, larger than
    ``SEEDS_FILE_LIMIT_BYTES``, not UTF-8, or a line is not JSON (with its line number):
    propose appends only to a file it can read back as JSON lines.
    """
    shown = seeds_quarantine_path(review, relation_id)
    if view.symlink_target(shown) is not None:
        raise BadInputError(shown, f"is a symlink on {branch}; {_NOT_REAL_DIR}")
    data = view.read_bytes(shown)
    if data is None:
        return None
    if len(data) > SEEDS_FILE_LIMIT_BYTES:
        raise BadInputError(shown, f"is larger than {SEEDS_FILE_LIMIT_BYTES} bytes; not appending to it")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(shown, "not UTF-8 text; not appending to it", data.count(b"\n", 0, exc.start) + 1) from None
    bad = first_bad_jsonl_line(text)
    if bad is not None:
        raise BadInputError(shown, f"not a JSON line ({bad[1]}); not appending to it", bad[0])
    return text


def check_quarantine(review: Review, seeds_relation_id: str | None = None) -> None:
    """Refuse up front (before a drafter runs) what ``commit_candidates`` /
    ``commit_seed_rows`` would refuse: no local oracle branch (CommitRefused, exit 64); a
    quarantine directory the branch holds as a file or symlink, and for
    ``seeds_relation_id`` a quarantine seeds file that is a symlink or not JSON lines
    (BadInputError, exit 5). The committers check the tip again when they commit."""
    branch, view = oracle_tip(review)
    check_tip_directory(view, review.layout.quarantine_dir, branch)
    if seeds_relation_id is not None:
        tip_seeds_text(review, seeds_relation_id, view, branch)


def quarantine_names(review: Review) -> dict[str, str]:
    """``id_key`` -> an id already in quarantine: the review's candidates (their ids and file
    names) and the ``*.yaml`` / ``*.yml`` file names on the oracle branch's tip."""
    names = {c.id for c in review.candidates}
    names |= {c.path.rsplit("/", 1)[-1].rsplit(".", 1)[0] for c in review.candidates}
    _branch, view = oracle_tip(review)
    listed = [p.rsplit("/", 1)[-1] for p in view.list_files(review.layout.quarantine_dir)]
    names |= {n.rsplit(".", 1)[0] for n in listed if n.endswith((".yaml", ".yml"))}
    keys: dict[str, str] = {}
    for name in sorted(names):
        keys.setdefault(id_key(name), name)
    return keys


def commit_drafts(review: Review, branch: str, subject: str, changes: list[tuple[str, str]],
                   drafter: str) -> CommitResult:
    """One quarantine: commit of ``changes`` ((path, text) pairs) onto ``branch``."""
    from relconsole.engine.repo.commitkinds import FileChange
    from relconsole.engine.repo.commits import commit_changes
    body = (f"Drafted by a model through relconsole propose and validated; not accepted.\n"
            f"drafter: {one_line(drafter)}\n"
            "A reviewer accepts (a catalog: commit) or deletes (a quarantine: commit) each item.")
    files = [FileChange(path, text.encode("utf-8")) for path, text in changes]
    return commit_changes(review.repo, branch, "quarantine", one_line(subject), files, body,
                          layout=review.layout)


def subject_ids(ids: list[str], limit: int = 60) -> str:
    """``ids`` joined for a commit subject, cut to about ``limit`` characters with the count kept."""
    shown = ", ".join(ids)
    return shown if len(shown) <= limit else f"{len(ids)} candidates ({shown[:limit - 1]}…)"


def quarantine_path(review: Review, candidate_id: str) -> str:
    """``<quarantine dir>/<id>.yaml`` (repository-relative)."""
    return f"{review.layout.quarantine_dir.rstrip('/')}/{candidate_id}.yaml"


def seeds_quarantine_path(review: Review, relation_id: str) -> str:
    """``<quarantine dir>/<relation id>.seeds.jsonl`` (repository-relative)."""
    return f"{review.layout.quarantine_dir.rstrip('/')}/{relation_id}{SEEDS_SUFFIX}"
