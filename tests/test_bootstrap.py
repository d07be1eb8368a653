"""``relconsole init`` on a repository with no oracle (issue 16): one ``oracle: init`` commit,
then the ordinary review flow (validate, accept, owners, a patch caught)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relconsole.cli.main import main
from relconsole.engine.errors import EXIT_PASS, EXIT_REJECT, EXIT_USAGE
from relconsole.engine.repo.config import layout_from_pyproject
from relconsole.engine.repo.splitcheck import check_split
from bench.gitrepo import commit_all, committed_repo, git, write_files
from tests.conftest import TODAY

CORE = '''import json


def normalize(rows):
    """The words of each language, lower-cased, stripped and sorted."""
    out = {}
    for row in rows:
        out.setdefault(row["lang"], set()).add(row["word"].strip().lower())
    return {lang: sorted(words) for lang, words in out.items()}


def dumps(rows):
    return json.dumps(rows, ensure_ascii=False)


def loads(text):
    return json.loads(text)
'''


@pytest.fixture
def textkit(tmp_path: Path) -> Path:
    """A library nobody wrote for relconsole: a src/ package re-exporting from its module, a
    test, a README and a committed corpus; no oracle."""
    files = {"src/textkit/__init__.py": "from .core import dumps, loads, normalize\n", "src/textkit/core.py": CORE,
             "tests/test_core.py": "def test_nothing():\n    pass\n", "README.md": "# textkit\n",
             "data/words.csv": "word,lang\n Hello ,en\nhola,es\nWORLD,en\nmundo,es\nsun,en\nluna,es\nsky,en\n"}
    return committed_repo(tmp_path / "textkit", files, identity=("Rita Reviewer", "rita@example.org"),
                          message="textkit")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_init_writes_one_oracle_commit_a_review_can_read_and_refuses_a_second(textkit: Path, capsys):
    before = git(textkit, "rev-parse", "HEAD").strip()
    (textkit / "notes.txt").write_text("my own unstaged note\n")
    code, out, _ = cli(capsys, "init", "--repo", str(textkit), "--corpus", "data/words.csv", "--subject",
                       "textkit.core:normalize", "--subject", "textkit.core:dumps", "--today", TODAY.isoformat(),
                       "--json")
    assert code == EXIT_PASS
    payload = json.loads(out)
    assert payload["kind"] == "init" and payload["message"].startswith("oracle: init")
    assert all(p.startswith("oracle/") for p in payload["paths"]) and "oracle/data/words.csv" in payload["paths"]
    assert check_split(textkit, f"{before}..HEAD") == []  # the oracle's first commit stands alone
    assert (textkit / "notes.txt").read_text() == "my own unstaged note\n"
    lease = git(textkit, "show", "HEAD:oracle/leases/words.yaml")
    blob = git(textkit, "rev-parse", f"{before}:data/words.csv").strip()
    import hashlib
    assert hashlib.sha256(git(textkit, "cat-file", "blob", blob).encode()).hexdigest() in lease
    code, out, _ = cli(capsys, "validate", "--repo", str(textkit), "--json", "--today", TODAY.isoformat())
    report = json.loads(out)
    assert code == EXIT_PASS and report["errors"] == []
    assert sorted(c["id"] for c in report["candidates"] if c["valid"]) == [
        "textkit.core.dumps_roundtrip", "textkit.core.normalize_order"]  # drafted, valid, not accepted
    catalog = git(textkit, "show", "HEAD:oracle/catalog.yaml")
    assert "relations: []" in catalog and '# "src/textkit/**"' in catalog and '"tests/**": []' in catalog
    tip = git(textkit, "rev-parse", "HEAD").strip()
    code, _, err = cli(capsys, "init", "--repo", str(textkit), "--corpus", "data/words.csv")
    assert code == EXIT_USAGE and "already has an oracle" in err and git(textkit, "rev-parse", "HEAD").strip() == tip


@pytest.mark.parametrize("subject,words", [("textkit.core:nothing", "no function"), ("nope:f", "module:function"),
                                           ("textkit.core", "module:function")])
def test_init_refuses_a_subject_it_cannot_find_and_writes_nothing(textkit: Path, capsys, subject, words):
    tip = git(textkit, "rev-parse", "HEAD").strip()
    code, _, err = cli(capsys, "init", "--repo", str(textkit), "--corpus", "data/words.csv", "--subject", subject)
    assert code == EXIT_USAGE and words in err and git(textkit, "rev-parse", "HEAD").strip() == tip


def test_an_adopted_repository_catches_a_patch_once_its_relations_are_accepted_and_owned(textkit: Path, capsys):
    args = ["--repo", str(textkit), "--today", TODAY.isoformat()]
    assert cli(capsys, "init", "--corpus", "data/words.csv", "--subject", "textkit.core:normalize", *args)[0] == 0
    code, out, _ = cli(capsys, "accept", "textkit.core.normalize_order", "--override-unconfirmed", *args)
    assert code == EXIT_PASS and "'src/textkit/core.py': [textkit.core.normalize_order]" in out
    catalog = textkit / "oracle" / "catalog.yaml"
    catalog.write_text(catalog.read_text().replace(
        '  # "src/textkit/**": [ ]   # the relations that guard it; until then a coverage gap',
        '  "src/textkit/**": [textkit.core.normalize_order]'))
    git(textkit, "commit", "-q", "-am", "catalog: textkit is guarded")
    git(textkit, "checkout", "-q", "-b", "patch")
    core = textkit / "src" / "textkit" / "core.py"
    patched = core.read_text().replace("set()).add(", "[]).append(").replace("sorted(words)", "words")
    assert patched != core.read_text()
    core.write_text(patched)  # the words in the order the rows came: a shuffle changes the answer
    git(textkit, "commit", "-q", "-am", "agent: skip the sort")
    code, out, _ = cli(capsys, "run", *args)
    assert code == EXIT_REJECT and "textkit.core.normalize_order: REJECT" in out


def test_tests_inside_a_package_stay_exempt_once_the_package_is_owned(tmp_path: Path, capsys):
    """hyperlink keeps its tests in src/hyperlink/test/: init exempts them below the package's
    line, so uncommenting that line (the last match wins) leaves them exempt (new-user trial)."""
    import yaml
    from relconsole.engine.repo.owners import winning_pattern
    repo = committed_repo(tmp_path / "kit", {"src/kit/__init__.py": "def f(x):\n    return x\n",
                                            "src/kit/test/test_f.py": "def test_f():\n    pass\n"},
                          identity=("Rita Reviewer", "rita@example.org"), message="kit")
    assert cli(capsys, "init", "--repo", str(repo), "--today", TODAY.isoformat())[0] == EXIT_PASS
    text = git(repo, "show", "HEAD:oracle/catalog.yaml")
    owned = text.replace('# "src/kit/**": [ ]', '"src/kit/**": [kit.f]')
    owners = [(p, ids or []) for p, ids in yaml.safe_load(owned)["owners"].items()]
    assert winning_pattern(owners, "src/kit/test/test_f.py")[1] == []
    assert winning_pattern(owners, "src/kit/__init__.py")[1] == ["kit.f"]


def test_a_relation_on_a_package_is_proposed_the_package_folder(textkit: Path, capsys):
    """A subject named through the package (textkit:normalize, re-exported by __init__.py):
    accept proposes the package's folder, as init's comments do, not its __init__.py alone
    (new-user trial on hyperlink, issue 36)."""
    args = ["--repo", str(textkit), "--today", TODAY.isoformat()]
    assert cli(capsys, "init", "--corpus", "data/words.csv", "--subject", "textkit:normalize", *args)[0] == 0
    code, out, _ = cli(capsys, "accept", "textkit.normalize_order", "--override-unconfirmed", *args)
    assert code == EXIT_PASS and "'src/textkit/**': [textkit.normalize_order]" in out, out


def test_a_subject_that_does_not_take_rows_gets_no_nonsense_candidate(textkit: Path, capsys):
    """Tried on pypa/packaging: ``version:parse`` takes a str; a permutation of corpus rows
    over it would be nonsense. init says so and drafts nothing for it; tests/ (a package
    there) is exempt, never a gap too."""
    core = textkit / "src" / "textkit" / "core.py"
    core.write_text(core.read_text() + "\n\ndef parse(text: str) -> list:\n    return text.split()\n")
    (textkit / "tests" / "__init__.py").write_text("")
    git(textkit, "add", "-A")
    git(textkit, "commit", "-q", "-m", "parse")
    code, out, _ = cli(capsys, "init", "--repo", str(textkit), "--corpus", "data/words.csv",
                       "--subject", "textkit.core:parse", "--today", TODAY.isoformat())
    assert code == EXIT_PASS and "no candidate for textkit.core:parse: it takes str" in out
    assert git(textkit, "ls-tree", "--name-only", "HEAD", "oracle/quarantine/").strip() in ("", "oracle/quarantine/.gitkeep")
    catalog = git(textkit, "show", "HEAD:oracle/catalog.yaml")
    assert '"tests/**": []' in catalog and '# "tests/**"' not in catalog


def test_an_accepted_relation_over_an_oracle_adapter_is_not_told_to_own_the_adapter(textkit: Path, capsys):
    """Tried on pypa/packaging: a relation whose subject is an adapter in oracle/ (calling the
    library) was told to own the adapter's file; the code it guards is the library."""
    args = ["--repo", str(textkit), "--today", TODAY.isoformat()]
    assert cli(capsys, "init", "--corpus", "data/words.csv", *args)[0] == EXIT_PASS
    (textkit / "oracle" / "adapters.py").write_text(
        "from textkit import normalize\n\n\ndef languages(rows):\n    return sorted(normalize(rows))\n")
    (textkit / "oracle" / "quarantine" / "textkit.languages_order.yaml").write_text(
        "id: textkit.languages_order\ntransform: permute\ncompare: exact\n"
        "must_not: assert a literal list of languages in a test\nsubject: oracle.adapters:languages\n"
        "input: {lease: words}\nparams: {shuffles: 3}\n"
        "statement: Shuffling the rows of words (word, lang) leaves the languages found unchanged.\n"
        "drafted_by: a script\ndrafted_at: \"2026-11-30T00:00:00Z\"\nsource: a test\n")
    git(textkit, "add", "-A")
    git(textkit, "commit", "-q", "-m", "quarantine: an adapter and a candidate over it")
    code, out, _ = cli(capsys, "accept", "textkit.languages_order", "--override-unconfirmed", *args)
    # the hint names the library code the adapter reaches (through the package's re-export)
    assert code == EXIT_PASS and "'src/textkit/core.py': [textkit.languages_order]" in out, out
    assert "oracle/adapters.py'" not in out


def _candidate(rid: str, inp: str, statement: str) -> str:
    return (f"id: {rid}\ntransform: roundtrip\ncompare: exact\n"
            "must_not: assert a literal encoding in a test\n"
            "subject: textkit.core:dumps\ninverse: textkit.core:loads\n"
            f"input: {inp}\nstatement: {statement}\n"
            "drafted_by: a script\ndrafted_at: \"2026-11-30T00:00:00Z\"\nsource: a test\n")


def test_sound_candidates_over_plain_and_heterogeneous_seeds_are_validated_confirmed_and_accepted(
        textkit: Path, capsys):
    """Tried on two real libraries: no candidate over existing seeds could reach confirmed.
    Seeds of plain values (§3 lets them omit a schema) and object rows of which some lack a
    key (declared ``optional``) now go through validate, confirm and accept, and run holds."""
    args = ["--repo", str(textkit), "--today", TODAY.isoformat()]
    assert cli(capsys, "init", "--corpus", "data/words.csv", *args)[0] == EXIT_PASS
    seeds = {"oracle/seeds/words.jsonl": ['"Hello"', '"mundo"', '"día"'],
             "oracle/seeds/pairs.jsonl": ['{"word": "sun", "lang": "en"}', '{"word": "luna"}']}
    for path, rows in seeds.items():
        (textkit / path).parent.mkdir(parents=True, exist_ok=True)
        (textkit / path).write_text("\n".join(rows) + "\n")
    quarantine = textkit / "oracle" / "quarantine"
    (quarantine / "textkit.plain_roundtrip.yaml").write_text(_candidate(
        "textkit.plain_roundtrip", "{seeds: oracle/seeds/words.jsonl}",
        "Decoding the encoding of each word gives the word back."))
    (quarantine / "textkit.pairs_roundtrip.yaml").write_text(_candidate(
        "textkit.pairs_roundtrip",
        "{seeds: oracle/seeds/pairs.jsonl, schema: {word: str, lang: {type: str, optional: true}}}",
        "Decoding the encoding of a word row (word, and lang where known) gives the row back."))
    git(textkit, "add", "-A")
    git(textkit, "commit", "-q", "-m", "catalog and quarantine: seeds and two drafts")
    code, out, _ = cli(capsys, "validate", "--json", *args)
    verdicts = {c["id"]: c for c in json.loads(out)["candidates"]}
    for rid in ("textkit.plain_roundtrip", "textkit.pairs_roundtrip"):
        assert verdicts[rid]["valid"], verdicts[rid]
        code, out, _ = cli(capsys, "confirm", rid, *args)
        assert code == EXIT_PASS and f"{rid}: confirmed" in out
        code, out, err = cli(capsys, "accept", rid, *args)
        assert code == EXIT_PASS, err
    code, out, _ = cli(capsys, "run", "--all", *args)
    assert "textkit.plain_roundtrip: PASS" in out and "textkit.pairs_roundtrip: PASS" in out, out


def test_a_drafted_schema_that_contradicts_its_seeds_is_rejected_by_validation(textkit: Path, capsys):
    """A candidate's own input schema is checked against the rows it reads: a fake field
    (``lang`` required where a row lacks it) is caught by validate, before confirm or accept."""
    args = ["--repo", str(textkit), "--today", TODAY.isoformat()]
    assert cli(capsys, "init", "--corpus", "data/words.csv", *args)[0] == EXIT_PASS
    (textkit / "oracle" / "seeds").mkdir(exist_ok=True)
    (textkit / "oracle" / "seeds" / "pairs.jsonl").write_text('{"word": "sun", "lang": "en"}\n{"word": "luna"}\n')
    (textkit / "oracle" / "quarantine" / "textkit.fake.yaml").write_text(_candidate(
        "textkit.fake", "{seeds: oracle/seeds/pairs.jsonl, schema: {word: str, lang: str}}",
        "Decoding the encoding of a row keeps its word and lang."))
    git(textkit, "add", "-A")
    git(textkit, "commit", "-q", "-m", "a draft with a schema its seeds do not fit")
    code, out, _ = cli(capsys, "validate", "--json", *args)
    fake = next(c for c in json.loads(out)["candidates"] if c["id"] == "textkit.fake")
    assert not fake["valid"] and any("row 2" in r and "lang" in r for r in fake["reasons"]), fake
    code, _, err = cli(capsys, "accept", "textkit.fake", "--override-unconfirmed", *args)
    assert code == EXIT_USAGE and "input.schema does not fit" in err and "row 2" in err


def _misses_on_base(textkit: Path, capsys) -> list[str]:
    """An adopted textkit with a candidate that misses on every side (it encodes a word
    twice and calls that the word), confirmed; returns the CLI's repository arguments."""
    args = ["--repo", str(textkit), "--today", TODAY.isoformat()]
    assert cli(capsys, "init", "--corpus", "data/words.csv", *args)[0] == EXIT_PASS
    (textkit / "oracle" / "seeds").mkdir(exist_ok=True)
    (textkit / "oracle" / "seeds" / "words.jsonl").write_text('"Hello"\n"mundo"\n')
    broken = _candidate("textkit.twice_encoded", "{seeds: oracle/seeds/words.jsonl}",
                        "Encoding a word twice gives the word back.").replace("inverse: textkit.core:loads",
                                                                              "inverse: textkit.core:dumps")
    (textkit / "oracle" / "quarantine" / "textkit.twice_encoded.yaml").write_text(broken)
    git(textkit, "add", "-A")
    git(textkit, "commit", "-q", "-m", "catalog and quarantine: seeds and a draft that cannot hold")
    code, out, _ = cli(capsys, "confirm", "textkit.twice_encoded", *args)
    assert "confirmed" in out and "misses on the base" in out
    return args


def test_a_candidate_that_misses_on_head_and_base_is_not_accepted_as_confirmed(textkit: Path, capsys):
    """Tried on pypa/packaging: a roundtrip whose replays agreed that it misses on both sides
    was "confirmed" and accepted, and then failed every review. accept refuses it, and confirm
    says so; the reviewer's override of the second replay does not make it hold: the commit
    it would make is refused for the miss itself, naming the seed row (a miss is the patch's
    only when the base holds)."""
    args = _misses_on_base(textkit, capsys)
    tip = git(textkit, "rev-parse", "main").strip()
    code, _, err = cli(capsys, "accept", "textkit.twice_encoded", *args)
    assert code == EXIT_USAGE and "misses on the base" in err and git(textkit, "rev-parse", "main").strip() == tip
    code, _, err = cli(capsys, "accept", "textkit.twice_encoded", "--override-unconfirmed", *args)
    assert code == EXIT_USAGE and "textkit.twice_encoded misses on the catalog: commit" in err and "seed row" in err
    assert git(textkit, "rev-parse", "main").strip() == tip


async def test_the_console_asks_before_accepting_a_confirmed_candidate_that_misses_on_the_base(textkit: Path, capsys):
    """The Quarantine pane says the candidate misses on head and base; a asks for the override
    (n leaves the branch alone), y then c y tries the commit, which is refused for the miss
    (a notification naming it; the branch stays)."""
    from relconsole.console.app import ReviewApp
    from relconsole.console.screens.confirm import ConfirmScreen
    from tests.test_console import SIZE, goto, prompts, settle
    _misses_on_base(textkit, capsys)
    path = "oracle/quarantine/textkit.twice_encoded.yaml"
    tip = git(textkit, "rev-parse", "main").strip()
    app = ReviewApp(repo=str(textkit), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "quarantine", f"c:{path}")
        assert "misses on the base" in prompts(app, "quarantine")[f"c:{path}"]
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "misses on the base" in str(app.screen.title_text)
        await pilot.press("n")
        await pilot.pause()
        assert "accept pending" not in prompts(app, "quarantine")[f"c:{path}"]
        assert git(textkit, "rev-parse", "main").strip() == tip
        await pilot.press("a", "y")
        await pilot.press("c", "y")
        await settle(pilot)
        assert any("textkit.twice_encoded misses on the catalog: commit" in n.message for n in app._notifications)
    assert git(textkit, "rev-parse", "main").strip() == tip


def test_init_names_every_path_of_the_tree_exempt_or_as_a_listed_gap(textkit: Path, capsys):
    """Tried on pallets/markupsafe: uv.lock, MANIFEST.in and .devcontainer/ were neither exempt
    nor listed, so the first patch touching them was a gap nobody had been shown. Every path
    of the tree is now under an exempt pattern or a commented-out owners line."""
    from relconsole.engine.repo.owners import protection
    extra = {"uv.lock": "lock\n", "MANIFEST.in": "include *.md\n", "bench.py": "print(1)\n",
             ".gitattributes": "* text=auto\n", "scripts/release.sh": "echo\n", ".devcontainer/x.json": "{}\n"}
    write_files(textkit, extra)
    commit_all(textkit, "more files")
    assert cli(capsys, "init", "--repo", str(textkit), "--today", TODAY.isoformat())[0] == EXIT_PASS
    catalog = git(textkit, "show", "HEAD:oracle/catalog.yaml")
    patterns = [line.split('"')[1] for line in catalog.splitlines() if line.strip().startswith(('"', '# "'))]

    named = protection(patterns)  # the owners engine's own matching (gitignore: /LICENSE* is the root's)
    tree = git(textkit, "ls-tree", "-r", "--name-only", "HEAD~1").split()
    assert [p for p in tree if not named(p)] == []
    assert '# ".gitattributes"' in catalog  # shown to the reviewer, never silently exempt


def test_root_files_exempt_ahead_of_time_stay_code_inside_a_package(textkit: Path, capsys):
    """LICENSE*, CHANGES*, setup.cfg and the like are exempt before they exist, at the root
    only: a module of the same name inside a package stays the package's (red team, issue 36)."""
    from relconsole.engine.oracle.bootstrap import ALWAYS_EXEMPT
    from relconsole.engine.repo.owners import protection
    assert cli(capsys, "init", "--repo", str(textkit), "--today", TODAY.isoformat())[0] == EXIT_PASS
    catalog = git(textkit, "show", "HEAD:oracle/catalog.yaml")
    exempt = [line.split('"')[1] for line in catalog.splitlines() if line.strip().startswith('"')]
    assert set(ALWAYS_EXEMPT) <= set(exempt), "written whether or not the repository has them yet"
    grown_later = [".github/workflows/ci.yml", "LICENSE", "CHANGELOG.md", ".pre-commit-config.yaml",
                   "src/textkit/py.typed", "setup.cfg", "CITATION.cff"]
    assert all(map(protection(exempt), grown_later))
    code_named_alike = ["src/textkit/LICENSE.py", "src/textkit/CHANGES.py", "src/textkit/setup.cfg"]
    assert not any(map(protection(exempt), code_named_alike))


@pytest.mark.parametrize("corpus", ["data/words.jsonl", "data/words.jsonl.gz"])
def test_a_candidate_over_a_json_lines_lease_names_its_keys(textkit: Path, capsys, corpus):
    """Red team: the first line of a JSON-lines corpus was CSV-split as a header, so every
    candidate over it was vacuous or had its schema refused."""
    import gzip
    rows = "".join(json.dumps({"word": w, "lang": lang}) + "\n" for w, lang in (("sun", "en"), ("sol", "es")))
    data = gzip.compress(rows.encode()) if corpus.endswith(".gz") else rows.encode()
    (textkit / corpus).write_bytes(data)
    git(textkit, "add", "-A")
    git(textkit, "commit", "-q", "-m", "a JSON-lines corpus")
    args = ["--repo", str(textkit), "--today", TODAY.isoformat()]
    assert cli(capsys, "init", "--corpus", corpus, *args)[0] == EXIT_PASS
    lease = git(textkit, "ls-tree", "--name-only", "HEAD", "oracle/leases/").split()[0].rsplit("/", 1)[-1][:-5]
    (textkit / "oracle" / "quarantine" / "textkit.words_order.yaml").write_text(
        "id: textkit.words_order\ntransform: permute\ncompare: exact\n"
        "must_not: assert a literal list of words in a test\nsubject: textkit.core:normalize\n"
        f"input: {{lease: {lease}, schema: {{word: str, lang: str}}}}\nparams: {{shuffles: 3}}\n"
        "statement: Shuffling the rows keeps each lang's sorted words.\n"
        "drafted_by: a script\ndrafted_at: \"2026-11-30T00:00:00Z\"\nsource: a test\n")
    git(textkit, "add", "-A")
    git(textkit, "commit", "-q", "-m", "quarantine: a draft over the JSON-lines lease")
    code, out, _ = cli(capsys, "validate", "--json", *args)
    found = next(c for c in json.loads(out)["candidates"] if c["id"] == "textkit.words_order")
    assert found["valid"], found["reasons"]


def test_init_on_a_tree_with_nothing_to_exempt_writes_a_catalog_that_loads(tmp_path: Path, capsys):
    """Only a package: every owners entry is a commented-out gap, and the catalog still loads
    (an empty mapping, not null); uncommenting the entry as told makes the package owned."""
    repo = committed_repo(tmp_path / "bare", {"pkg/core.py": "def f(x):\n    return x\n"}, identity=None,
                          message="a package and nothing else")
    code, _, err = cli(capsys, "init", "--repo", str(repo), "--today", TODAY.isoformat())
    assert code == EXIT_PASS, err
    assert cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())[0] == EXIT_PASS
    catalog = repo / "oracle" / "catalog.yaml"
    text = catalog.read_text()
    entry = next(line for line in text.splitlines() if line.lstrip().startswith('# "pkg'))
    edited = text.replace(entry, entry.lstrip().removeprefix("# ").split("#")[0].rstrip()
                          .replace("[ ]", "[]").join(("  ", ""))).replace("owners: {}", "owners:", 1)
    edited = edited.replace("owners:   # nothing exempt yet: delete the {} when you uncomment an entry", "owners:")
    catalog.write_text(edited)
    git(repo, "commit", "-q", "-am", "catalog: exempt the package")
    assert cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())[0] == EXIT_PASS


def test_init_in_a_repository_without_commits_says_so_in_one_line(tmp_path: Path, capsys):
    """Issue 17: it said "unknown ref 'main'", as if the user had mistyped a branch."""
    root = tmp_path / "fresh"
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    (root / "app.py").write_text("def f():\n    return 1\n")
    for args in ([], ["--base", "main"], ["--base", "trunk"]):
        code, out, err = cli(capsys, "init", "--repo", str(root), *args)
        [line] = err.splitlines()
        assert code != EXIT_PASS and out == "" and "no commit" in line and "unknown ref" not in line, line
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    code, _, err = cli(capsys, "init", "--repo", str(root), "--base", "trunk")  # now a real unknown ref
    assert code != EXIT_PASS and "unknown ref 'trunk'" in err


def test_init_counts_one_package_in_the_singular(textkit: Path, capsys):
    import re
    code, out, _ = cli(capsys, "init", "--repo", str(textkit), "--today", TODAY.isoformat())
    assert code == EXIT_PASS
    [summary] = [line for line in out.splitlines() if "package" in line]
    counts = re.findall(r"(?<![\d.])(\d+) ((?:[a-z-]+ )*?(?:packages?|patterns?|paths?)\b)", summary)
    assert len(counts) == 3 and any(n == "1" for n, _ in counts), summary  # the fixture has one package
    for n, words in counts:
        assert words.endswith("s") == (n != "1"), (n, words, summary)


def test_init_on_main_says_nothing_of_a_base(textkit: Path, capsys):
    code, out, _ = cli(capsys, "init", "--repo", str(textkit), "--today", TODAY.isoformat())
    assert code == EXIT_PASS and git(textkit, "branch", "--show-current").strip() == "main"
    assert "--base" not in out


def test_validate_says_which_oracle_edits_it_did_not_read(textkit: Path, capsys):
    """validate reads the committed oracle (§2); an edit not committed yet is named as unread,
    not passed over in silence, and committing it makes validate read (and judge) it."""
    assert cli(capsys, "init", "--repo", str(textkit), "--today", TODAY.isoformat())[0] == EXIT_PASS
    args = ("validate", "--repo", str(textkit), "--today", TODAY.isoformat())
    code, out, _ = cli(capsys, *args)
    assert code == EXIT_PASS and "not committed" not in out
    catalog = textkit / "oracle" / "catalog.yaml"
    catalog.write_text(catalog.read_text() + "relations: [unclosed\n")
    (textkit / "oracle" / "seeds").mkdir()
    (textkit / "oracle" / "seeds" / "new.jsonl").write_text('"1.0"\n')
    (textkit / "notes.txt").write_text("not the oracle's\n")
    code, out, _ = cli(capsys, *args)
    unread = [line for line in out.splitlines() if "not committed" in line]
    assert code == EXIT_PASS, "the committed oracle is still sound"
    assert any("oracle/catalog.yaml" in line for line in unread) and any("new.jsonl" in line for line in unread)
    assert not any("notes.txt" in line for line in unread), "only the protected tree is the oracle"
    git(textkit, "add", "oracle/catalog.yaml")
    git(textkit, "commit", "-q", "-m", "catalog: a broken edit")
    code, _, err = cli(capsys, *args)
    assert code != EXIT_PASS and "catalog.yaml" in err


@pytest.mark.parametrize("declared", [
    '[tool.hatch.build.hooks.vcs]\nversion-file = "src/textkit/_version.py"\n',
    '[tool.setuptools_scm]\nversion_file = "src/textkit/_version.py"\n',
])
def test_init_gives_a_version_file_the_build_writes_a_stub_and_the_package_imports(tmp_path: Path, capsys, declared):
    """New-user trial on humanize (issue 37): its __init__ imports the _version.py hatch-vcs writes,
    which git does not have, so every relation missed on the base until the user found the setting."""
    files = {"src/textkit/__init__.py": "from ._version import __version__\nfrom .core import dumps, loads, normalize\n",
             "src/textkit/core.py": CORE, "README.md": "# textkit\n",
             "pyproject.toml": '[project]\nname = "textkit"\ndynamic = ["version"]\n\n' + declared}
    repo = committed_repo(tmp_path / "textkit", files, identity=("Rita Reviewer", "rita@example.org"),
                          message="textkit")
    code, _out, err = cli(capsys, "init", "--repo", str(repo), "--today", TODAY.isoformat())
    assert code == EXIT_PASS, err
    text = git(repo, "show", "HEAD:pyproject.toml")
    assert text.startswith(files["pyproject.toml"].split("\n\n")[0])  # the project's own lines kept
    generated = layout_from_pyproject(text).generated
    assert list(generated) == ["src/textkit/_version.py"]
    namespace: dict = {}
    exec(generated["src/textkit/_version.py"], namespace)  # the stub defines what a version module does
    assert isinstance(namespace["__version__"], str) and isinstance(namespace["version_tuple"], tuple)
    assert files["pyproject.toml"] != text and declared in text
