"""Re-hash of a drifted lease (SPEC §4: an explicit, confirmed action; §9: one lease: commit).

Real repositories in ``tmp_path``: the corpus is changed and committed on ``main``, the
preview is compared with hashlib over ``git show`` bytes and with the file's stat, and
the commit with ``git show``, ``git status --porcelain`` and ``git diff --cached``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relconsole.cli.main import main
from relconsole.engine.gate import actions
from relconsole.engine.errors import EXIT_PASS, EXIT_REJECT, EXIT_USAGE, CommitRefused, UsageError
from relconsole.engine.oracle.leases import DRIFTED, MISSING, OK, parse_lease
from relconsole.engine.oracle.rehash import rehash_preview
from relconsole.engine.gate.review import load_review
from relconsole.engine.oracle.textedit import set_lease_sha256
from bench.gitrepo import commit_all, git, git_bytes, init_repo
from tests.conftest import TODAY

MANIFEST = "oracle/leases/orders.yaml"
CORPUS = "oracle/data/orders.csv"
OWNER = "t@example.invalid"  # init_repo's identity


def manifest_text(digest: str, owner: str = OWNER, quote: str = '"') -> str:
    return textwrap.dedent(f"""\
        # Orders corpus: renew in a reviewed commit, never edit the CSV.
        id: orders
        path: {CORPUS}

        sha256: {quote}{digest}{quote}   # pinned by the owner
        expires: {(TODAY + dt.timedelta(days=10)).isoformat()}  # reviewed
        owner: [{owner}]
        allowed_relations: [orders.order_invariant]
        notes: synthetic orders; no PII
        """)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tip(repo: Path, ref: str = "main") -> str:
    return git(repo, "rev-parse", ref).strip()


def make_repo(root: Path, owner: str = OWNER, quote: str = '"', drift: bool = True) -> Path:
    """main: a corpus and its lease, then (``drift``) a committed change of the corpus."""
    repo = init_repo(root)
    (repo / "oracle" / "data").mkdir(parents=True)
    (repo / "oracle" / "leases").mkdir(parents=True)
    corpus = b"id,total\n1,10\n2,20\n"
    (repo / CORPUS).write_bytes(corpus)
    (repo / MANIFEST).write_text(manifest_text(sha256(corpus), owner, quote))
    (repo / "notes.txt").write_text("one\n")
    (repo / "draft.txt").write_text("draft\n")
    commit_all(repo, "base")
    if drift:
        (repo / CORPUS).write_bytes(corpus + b"3,30\n")
        commit_all(repo, "data: a third order")
    return repo


def review_of(repo: Path):
    return load_review(repo, "main", today=TODAY)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def test_preview_shows_both_digests_size_mtime_source_and_confirmer(repo: Path):
    committed = git_bytes(repo, "show", f"main:{CORPUS}")
    pinned = parse_lease(git(repo, "show", f"main:{MANIFEST}"), MANIFEST).sha256
    with review_of(repo) as review:
        assert review.lease("orders").state == DRIFTED
        preview = rehash_preview(review, "orders")
    assert preview.refusal is None and preview.state == DRIFTED
    assert preview.old_sha256 == pinned and preview.new_sha256 == sha256(committed) != pinned
    assert preview.size_bytes == len(committed)
    assert preview.mtime == dt.datetime.fromtimestamp((repo / CORPUS).stat().st_mtime).astimezone()
    assert preview.mtime.utcoffset() is not None and preview.working_file == str(repo / CORPUS)
    assert preview.commit == tip(repo) and preview.branch == "main" and preview.commit[:12] in preview.digest_source
    assert preview.blob == git(repo, "rev-parse", f"main:{CORPUS}").strip()
    assert preview.corpus_commit.sha == git(repo, "log", "-1", "--format=%H", "main", "--", CORPUS).strip()
    assert preview.confirmer == f"{git(repo, 'config', 'user.name').strip()} <{OWNER}>"
    assert json.loads(json.dumps(preview.as_dict()))["new_sha256"] == preview.new_sha256


@pytest.mark.parametrize("quote", ['"', "'", ""])
def test_rehash_commits_only_the_digest_and_leaves_the_users_work_alone(tmp_path: Path, quote: str):
    repo = make_repo(tmp_path / "repo", quote=quote)
    (repo / "notes.txt").write_text("one\nstaged\n")
    git(repo, "add", "notes.txt")
    (repo / "draft.txt").write_text("draft\nunstaged\n")
    (repo / "scratch.txt").write_text("untracked\n")
    status, staged, unstaged = (git(repo, "status", "--porcelain"), git(repo, "diff", "--cached"),
                                git(repo, "diff"))
    old_text = git_bytes(repo, "show", f"main:{MANIFEST}")
    before = tip(repo)
    with review_of(repo) as review:
        preview = rehash_preview(review, "orders")
        result = actions.rehash_lease(review, "orders", f"  {preview.new_sha256.upper()}\n")  # a paste

    assert result.paths == (MANIFEST,) and result.kind == "lease" and tip(repo) == result.sha
    assert git(repo, "rev-parse", f"{result.sha}^").strip() == before
    assert git(repo, "show", "--format=", "--name-only", result.sha).split() == [MANIFEST]
    new_text = git_bytes(repo, "show", f"main:{MANIFEST}")
    old, new = preview.old_sha256.encode(), preview.new_sha256.encode()
    written = new if quote else b'"' + new + b'"'  # always a quoted string (§4)
    assert new_text == old_text.replace(old, written) and old_text.count(old) == 1
    assert parse_lease(new_text.decode(), MANIFEST).sha256 == preview.new_sha256

    message = git(repo, "log", "-1", "--format=%B", result.sha)
    assert message.startswith(f"lease: re-hash orders ({preview.old_sha256[:6]}")
    assert preview.old_sha256 in message and preview.new_sha256 in message
    assert str(preview.size_bytes) in message and preview.mtime.isoformat(timespec="seconds") in message
    trailers = subprocess.run(["git", "interpret-trailers", "--parse"], input=message, text=True,
                              capture_output=True, check=True).stdout
    assert trailers.strip() == f"Confirmed-by: {preview.confirmer}"

    assert git(repo, "status", "--porcelain") == status
    assert git(repo, "diff", "--cached") == staged and git(repo, "diff") == unstaged
    assert (repo / MANIFEST).read_bytes() == new_text  # main is checked out: its manifest follows
    with review_of(repo) as review:
        assert review.lease("orders").state == OK


def test_renewal_and_rehash_agree_on_what_a_drifted_lease_needs(repo: Path):
    """Renewal refuses a drifted lease naming the state and the re-hash; after it, renewal works."""
    with review_of(repo) as review:
        with pytest.raises(CommitRefused, match="drifted") as refused:
            actions.renew_lease(review, "orders", TODAY + dt.timedelta(days=20))
        assert "relconsole lease rehash orders" in str(refused.value)
        actions.rehash_lease(review, "orders", rehash_preview(review, "orders").new_sha256)
    with review_of(repo) as review:
        renewed = actions.renew_lease(review, "orders", TODAY + dt.timedelta(days=20))
    assert git(repo, "log", "-1", "--format=%s", renewed.sha).startswith("lease: renew orders")


def test_renewal_of_a_missing_corpus_says_to_restore_it(repo: Path):
    git(repo, "rm", "-q", CORPUS)
    commit_all(repo, "data: drop orders")
    before = tip(repo)
    with review_of(repo) as review:
        assert review.lease("orders").state == MISSING
        with pytest.raises(CommitRefused, match="missing") as refused:
            actions.renew_lease(review, "orders", TODAY + dt.timedelta(days=20))
        assert "restore the corpus" in str(refused.value)
        preview = rehash_preview(review, "orders")
        assert preview.state == MISSING and "restore the corpus" in preview.refusal
        assert preview.new_sha256 is None and preview.size_bytes is None
        with pytest.raises(CommitRefused, match="missing"):
            actions.rehash_lease(review, "orders", "0" * 64)
    assert tip(repo) == before


def test_a_lease_that_matches_its_corpus_has_nothing_to_rehash(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", drift=False)
    before = tip(repo)
    with review_of(repo) as review:
        preview = rehash_preview(review, "orders")
        assert preview.state == OK and preview.old_sha256 == preview.new_sha256
        assert "nothing to re-pin" in preview.refusal and OK in preview.refusal
        with pytest.raises(CommitRefused, match="nothing to re-pin"):
            actions.rehash_lease(review, "orders", preview.new_sha256)
    assert tip(repo) == before


def test_only_an_owner_may_rehash(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", owner="alice@example.com")
    before = tip(repo)
    with review_of(repo) as review:
        preview = rehash_preview(review, "orders")
        assert preview.state == DRIFTED and "only an owner" in preview.refusal
        assert "alice@example.com" in preview.refusal and OWNER in preview.refusal
        with pytest.raises(CommitRefused, match="only an owner"):
            actions.rehash_lease(review, "orders", preview.new_sha256)
    assert tip(repo) == before


def test_a_corpus_changed_after_the_preview_is_refused(repo: Path):
    with review_of(repo) as review:
        preview = rehash_preview(review, "orders")
        (repo / CORPUS).write_bytes((repo / CORPUS).read_bytes() + b"4,40\n")
        changed = commit_all(repo, "data: a fourth order, after the screen")
        with pytest.raises(CommitRefused, match="changed since") as refused:
            actions.rehash_lease(review, "orders", preview.new_sha256)
        assert preview.new_sha256[:12] not in str(refused.value).split("now")[1]  # says the new one
        assert tip(repo) == changed
        fresh = rehash_preview(review, "orders")
        assert fresh.new_sha256 == sha256((repo / CORPUS).read_bytes()) != preview.new_sha256
        actions.rehash_lease(review, "orders", fresh.new_sha256)
    assert parse_lease(git(repo, "show", f"main:{MANIFEST}"), MANIFEST).sha256 == fresh.new_sha256


@pytest.mark.parametrize("staged", [False, True])
def test_an_uncommitted_corpus_change_is_refused(repo: Path, staged: bool):
    (repo / CORPUS).write_bytes(b"id,total\nnot committed\n")
    if staged:
        git(repo, "add", CORPUS)
    before = tip(repo)
    with review_of(repo) as review:
        preview = rehash_preview(review, "orders")
        assert preview.new_sha256 == sha256(git_bytes(repo, "show", f"main:{CORPUS}"))
        assert "commit the corpus" in preview.refusal
        with pytest.raises(CommitRefused, match="commit the corpus"):
            actions.rehash_lease(review, "orders", preview.new_sha256)
        with pytest.raises(CommitRefused, match="commit the corpus"):  # nor the working tree's digest
            actions.rehash_lease(review, "orders", sha256((repo / CORPUS).read_bytes()))
    assert tip(repo) == before


def test_another_branch_checked_out_pins_mains_bytes_and_says_so(repo: Path):
    """A clean checkout of another commit is not an uncommitted change: the digest is main's,
    and no modification time is taken from a file that is not what gets pinned."""
    git(repo, "checkout", "-q", "-b", "patch", "main~1")
    with review_of(repo) as review:
        preview = rehash_preview(review, "orders")
        assert preview.refusal is None and preview.mtime is None and preview.working_file is None
        assert "main" in preview.note and preview.new_sha256 == sha256(git_bytes(repo, "show", f"main:{CORPUS}"))
        actions.rehash_lease(review, "orders", preview.new_sha256)
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "patch"
    assert git(repo, "status", "--porcelain") == ""


def test_an_unknown_lease_is_a_usage_error(repo: Path):
    with review_of(repo) as review:
        with pytest.raises(UsageError):
            rehash_preview(review, "nope")


def test_cli_preview_asks_for_the_digest_then_commits(repo: Path, capsys):
    args = ["lease", "rehash", "orders", "--repo", str(repo), "--today", TODAY.isoformat()]
    before = tip(repo)
    code = main(args)
    out, err = capsys.readouterr()
    new = sha256(git_bytes(repo, "show", f"main:{CORPUS}"))
    assert code == EXIT_USAGE and f"--confirm {new}" in err and tip(repo) == before
    assert new in out and parse_lease(git(repo, "show", f"main:{MANIFEST}"), MANIFEST).sha256 in out

    code = main(args + ["--confirm", "f" * 64])
    out, err = capsys.readouterr()
    assert code == EXIT_REJECT and "changed since" in err and tip(repo) == before

    code = main(args + ["--confirm", new, "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == EXIT_PASS and payload["commit"] == tip(repo) != before
    assert payload["paths"] == [MANIFEST] and payload["preview"]["new_sha256"] == new

    code = main(args)  # now ok: a refusal, exit 1 with the reason
    assert code == EXIT_REJECT and "nothing to re-pin" in capsys.readouterr().err


@given(old=st.from_regex(r"[0-9a-f]{64}", fullmatch=True), new=st.from_regex(r"[0-9a-f]{64}", fullmatch=True),
       quote=st.sampled_from(['"', "'", ""]), crlf=st.booleans())
def test_set_lease_sha256_changes_only_the_digest(old: str, new: str, quote: str, crlf: bool):
    if not quote and old.isdigit():
        quote = '"'  # an all-digit plain scalar is a number, not a manifest this edit gets
    text = manifest_text(old, quote=quote)
    text = text.replace("\n", "\r\n") if crlf else text
    edited = set_lease_sha256(text, new, MANIFEST)
    assert edited == text.replace(f"{quote}{old}{quote}", f"{quote or chr(34)}{new}{quote or chr(34)}")
    assert parse_lease(edited, MANIFEST).sha256 == new


@pytest.mark.parametrize("digest", ["abc", "A" * 64, "g" * 64, "0" * 63, ""])
def test_set_lease_sha256_refuses_what_is_not_a_digest(digest: str):
    with pytest.raises(UsageError):
        set_lease_sha256(manifest_text("0" * 64), digest, MANIFEST)


def test_a_rehash_pins_what_the_next_review_hashes_even_through_eol_conversion(tmp_path):
    """Relation: re-hash, then review: the lease is no longer drifted. The tree asks for CRLF
    on checkout; both read the committed blob's own bytes (SPEC §7), whatever it asks."""
    repo = make_repo(tmp_path / "r", drift=False)
    (repo / ".gitattributes").write_text("*.csv text eol=crlf\n")
    commit_all(repo, "attributes: corpora are checked out with CRLF")
    (repo / CORPUS).write_bytes(b"id,total\n1,10\n2,20\n3,30\n")
    commit_all(repo, "data: a third order")
    blob = git_bytes(repo, "cat-file", "blob", f"main:{CORPUS}")
    with review_of(repo) as review:
        assert review.lease("orders").state == DRIFTED
        preview = rehash_preview(review, "orders")
        assert preview.new_sha256 == sha256(blob)  # the committed bytes, not a CRLF rendering
        actions.rehash_lease(review, "orders", preview.new_sha256)
    with review_of(repo) as review:
        assert review.lease("orders").state == OK


def test_two_manifests_sharing_an_id_are_never_renewed_rehashed_or_mixed_in_history(tmp_path):
    """Which one would a renewal extend? Every owner action refuses, naming both files."""
    repo = make_repo(tmp_path / "r")
    copy = "oracle/leases/orders-copy.yaml"
    (repo / copy).write_text((repo / MANIFEST).read_text())
    commit_all(repo, "a second manifest with the same id")
    before = tip(repo)
    from relconsole.engine.errors import BadInputError
    from relconsole.engine.gate.leasehistory import lease_history
    with review_of(repo) as review:
        for act in (lambda: actions.renew_lease(review, "orders", TODAY + dt.timedelta(days=20)),
                    lambda: rehash_preview(review, "orders"),
                    lambda: lease_history(review, "orders")):
            with pytest.raises(BadInputError) as caught:
                act()
            assert MANIFEST in caught.value.one_line() and copy in caught.value.one_line()
    assert tip(repo) == before


def test_a_rehash_confirmed_with_a_prefix_or_a_wrong_digest_is_refused_saying_which(tmp_path):
    repo = make_repo(tmp_path / "r")
    before = tip(repo)
    with review_of(repo) as review:
        new = rehash_preview(review, "orders").new_sha256
        with pytest.raises(CommitRefused) as prefix:
            actions.rehash_lease(review, "orders", new[:8])
        wrong = "0" * 64 if new != "0" * 64 else "1" * 64
        with pytest.raises(CommitRefused) as mistyped:
            actions.rehash_lease(review, "orders", wrong)
    assert "whole new digest" in prefix.value.one_line() and new in prefix.value.one_line()
    assert "mistyped" in mistyped.value.one_line()
    assert tip(repo) == before


def test_a_corpus_committed_as_an_inside_symlink_is_refused_with_what_to_do(tmp_path):
    repo = make_repo(tmp_path / "r", drift=False)
    (repo / "oracle" / "data" / "real.csv").write_bytes(b"id,total\n9,90\n")
    (repo / CORPUS).unlink()
    (repo / CORPUS).symlink_to("real.csv")
    commit_all(repo, "the corpus becomes a link to another file")
    with review_of(repo) as review:
        assert review.lease("orders").state == DRIFTED  # the review reads through the link
        refusal = rehash_preview(review, "orders").refusal
    assert "symlink" in refusal and "real.csv" in refusal and "point the lease" in refusal
