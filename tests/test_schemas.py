"""The shipped JSON Schemas (issue 17, Editors): standard Draft 2020-12 files that editors read,
the engine validates with, ``relconsole schema NAME`` prints, and ``init``/``demo`` point at."""

from __future__ import annotations

import copy
import datetime as dt
import json
import posixpath
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import relconsole
from relconsole.cli.main import main
from relconsole.engine.gate.flags import acks
from relconsole.engine.oracle import candidaterules, candidates
from relconsole.engine.oracle import catalog
from relconsole.engine.oracle import freezes
from relconsole.engine.oracle import leases
from relconsole.engine.oracle import schemacheck
from relconsole.engine.errors import EXIT_PASS, EXIT_USAGE, BadInputError
from relconsole.engine.oracle.yamlload import load_yaml_text
from relconsole.schemas import ID_BASE, NAMES
from bench.gitrepo import committed_repo, git
from tests.conftest import TODAY

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_repo" / "oracle"
SCHEMA_DIR = Path(relconsole.__file__).resolve().parent / "schemas"
MODELINE = re.compile(r"# yaml-language-server: \$schema=(\S+)\n")


def on_disk(name: str) -> dict:
    """The schema file as installed, read without relconsole's reader."""
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text("utf-8"))


class EditorLoader(yaml.SafeLoader):
    """YAML as an editor (yaml-language-server, YAML 1.2 core) sees it: an unquoted
    2026-12-31 is text, not a date."""


EditorLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def editor_view(path: Path):
    text = path.read_text("utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=EditorLoader)


def plain(name: str) -> Draft202012Validator:
    """A standard validator over the file: no custom type, the standard format checker."""
    return Draft202012Validator(on_disk(name), format_checker=Draft202012Validator.FORMAT_CHECKER)


def sample_candidates(fit: bool) -> list[Path]:
    """The sample's quarantined candidates whose fields the engine's rules accept (``fit``), or
    the ones carrying a field no rule lets through (an answer, a freeze)."""
    def fits(path: Path) -> bool:
        raw = load_yaml_text(path.read_text(), path.name).data
        return candidaterules.rule_fields(raw).ok and set(raw) <= candidates.CANDIDATE_FIELDS
    return [p for p in sorted((SAMPLE / "quarantine").glob("*.yaml")) if fits(p) == fit]


REAL_FILES = ([("catalog", SAMPLE / "catalog.yaml"), ("catalog", ROOT / "oracle" / "catalog.yaml"),
               ("freeze", SAMPLE / "freezes.json"), ("pin", SAMPLE / "pins.json")]
              + [("lease", p) for p in sorted((SAMPLE / "leases").glob("*.yaml"))]
              + [("candidate", p) for p in sample_candidates(fit=True)])


# --- the files themselves ------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_every_shipped_schema_is_a_valid_draft_2020_12_schema_with_an_id_and_a_title(name):
    schema = on_disk(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == ID_BASE + f"{name}.schema.json"
    assert schema["title"].strip() and schema["description"].strip()


def _properties(node, where=""):
    if isinstance(node, dict):
        for key, sub in (node.get("properties") or {}).items():
            yield f"{where}.{key}", sub
        for key, sub in node.items():
            yield from _properties(sub, f"{where}/{key}")
    elif isinstance(node, list):
        for index, sub in enumerate(node):
            yield from _properties(sub, f"{where}[{index}]")


@pytest.mark.parametrize("name", NAMES)
def test_every_field_has_a_description_for_the_editor_hover(name):
    schema = on_disk(name)
    defs = schema.get("$defs", {})
    missing = [where for where, sub in _properties(schema)
               if not sub.get("description") and not defs.get(sub.get("$ref", "").rsplit("/", 1)[-1], {}).get("description")]
    assert missing == []


def test_a_package_build_ships_every_schema_file():
    """pyproject's package data names the files the reader opens."""
    import tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = data["relconsole.schemas"]
    for name in NAMES:
        assert any(Path(f"{name}.schema.json").match(p) for p in patterns)
        assert (SCHEMA_DIR / f"{name}.schema.json").is_file()


def test_the_candidate_schema_shares_the_catalogs_definitions_and_the_engines_transforms():
    """The candidate file is self-contained (an editor resolves no cross-file $ref offline); its
    copies of the catalog's definitions and its transforms are the engine's."""
    cand, cat = on_disk("candidate"), on_disk("catalog")
    for name, definition in cand["$defs"].items():
        assert definition == cat["$defs"][name]
    assert set(cand["properties"]["transform"]["enum"]) == set(candidates.TRANSFORM_TO_KIND)
    assert set(candidates.TRANSFORM_TO_KIND.values()) <= set(catalog.KINDS)
    assert re.fullmatch(on_disk("ack")["$defs"]["row"]["properties"]["id"]["pattern"], "a" * acks.ID_LENGTH)


# --- the engine validates with the same files ----------------------------------------------

def test_the_engines_schemas_are_the_shipped_files():
    assert catalog.CATALOG_SCHEMA == on_disk("catalog") and leases.LEASE_SCHEMA == on_disk("lease")
    assert leases.PIN_SCHEMA == on_disk("pin")
    assert catalog.RELATION_SCHEMA["$defs"] == on_disk("catalog")["$defs"]
    assert freezes.ROW_SCHEMA["$defs"] == on_disk("freeze")["$defs"]
    assert acks.ROW_SCHEMA["$defs"] == on_disk("ack")["$defs"]
    assert candidates.CANDIDATE_FIELDS == set(on_disk("candidate")["properties"])
    assert list(candidates.REQUIRED) == on_disk("candidate")["required"]
    assert schemacheck.shipped("catalog") is schemacheck.shipped("catalog")  # loaded once


@pytest.mark.parametrize("name,path", REAL_FILES, ids=lambda v: v if isinstance(v, str) else v.name)
def test_real_oracle_files_validate_against_the_shipped_schema_as_an_editor_sees_them(name, path):
    errors = [e.message for e in plain(name).iter_errors(editor_view(path))]
    assert errors == []


def test_the_sample_candidates_smuggling_a_field_are_flagged_in_the_editor_too():
    hostile = sample_candidates(fit=False)
    assert hostile
    for path in hostile:
        assert not plain("candidate").is_valid(editor_view(path)), path


def test_real_oracle_files_load_in_the_engine():
    for name, path in REAL_FILES:
        text = path.read_text()
        if name == "catalog":
            assert catalog.load_catalog(text, path.name).relations
        elif name == "lease":
            assert leases.parse_lease(text, path.name).expires
        elif name == "freeze":
            assert freezes.parse_rows(text, path.name)
        elif name == "pin":
            assert set(leases.pin_states(text, SAMPLE.parent, path.name)) == set(json.loads(text))


def _engine_problem(name: str, data, text: str) -> str | None:
    """The engine's schema verdict on ``data`` dumped as YAML, as the engine loads it."""
    loaded = load_yaml_text(text, "f.yaml").data
    schema = {"catalog": catalog.CATALOG_SCHEMA, "lease": leases.LEASE_SCHEMA, "pin": leases.PIN_SCHEMA}[name]
    return schemacheck.first_error(loaded, schema)


# values the two readings of YAML agree on (no unquoted date, no 25.0: the engine is stricter there)
VALUES = st.sampled_from([7, -1, 1.5, "text", "", "mod:attr", "a" * 64, True, None, [], ["x"], {}, {"k": "v"},
                          "2026-12-31", "2026-02-30"])
MUTABLE = [("catalog", SAMPLE / "catalog.yaml"), ("catalog", ROOT / "oracle" / "catalog.yaml"),
           ("lease", SAMPLE / "leases" / "penguins.yaml"), ("pin", SAMPLE / "pins.json")]


def _paths(node, where=()):
    yield where
    if isinstance(node, dict):
        for key, sub in node.items():
            yield from _paths(sub, where + (key,))
    elif isinstance(node, list):
        for index, sub in enumerate(node):
            yield from _paths(sub, where + (index,))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(MUTABLE), st.data())
def test_the_engine_and_a_plain_validator_on_the_shipped_file_agree_on_mutated_real_files(target, data):
    """Replace, delete or add one value anywhere in a real file: the engine's schema check
    refuses it exactly when a standard validator over the shipped file does."""
    name, path = target
    doc = copy.deepcopy(editor_view(path))
    where = data.draw(st.sampled_from([p for p in _paths(doc) if p]))
    parent = doc
    for key in where[:-1]:
        parent = parent[key]
    action = data.draw(st.sampled_from(["replace", "delete", "add"]))
    if action == "replace":
        parent[where[-1]] = data.draw(VALUES)
    elif action == "delete":
        del parent[where[-1]]
    elif isinstance(parent[where[-1]], dict):
        parent[where[-1]][data.draw(st.sampled_from(["extra", "notes", "owner", "seed"]))] = data.draw(VALUES)
    text = yaml.safe_dump(doc, sort_keys=False)  # quotes strings that look like dates
    editor_ok = plain(name).is_valid(yaml.load(text, Loader=EditorLoader))
    assert (_engine_problem(name, doc, text) is None) == editor_ok


@settings(max_examples=60, deadline=None)
@given(st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(9999, 12, 31)), st.booleans())
def test_a_lease_expiry_written_quoted_or_unquoted_is_the_same_day(day, quoted):
    """PyYAML loads an unquoted day as a date, an editor as text: both are the schema's date."""
    text = (SAMPLE / "leases" / "penguins.yaml").read_text()
    written = f'"{day.isoformat()}"' if quoted else day.isoformat()
    text = re.sub(r"(?m)^expires: .*$", f"expires: {written}", text)
    assert leases.parse_lease(text, "l.yaml").expires == day
    assert plain("lease").is_valid(yaml.load(text, Loader=EditorLoader))


@pytest.mark.parametrize("written", ['"2026-02-30"', '"soon"', "12", '"20261231"'])
def test_a_lease_expiry_that_is_no_day_is_refused_by_both_with_a_readable_message(written):
    text = re.sub(r"(?m)^expires: .*$", f"expires: {written}", (SAMPLE / "leases" / "penguins.yaml").read_text())
    assert not plain("lease").is_valid(yaml.load(text, Loader=EditorLoader))
    with pytest.raises(BadInputError) as caught:
        leases.parse_lease(text, "l.yaml")
    message = caught.value.one_line()
    line = text.splitlines().index(f"expires: {written}") + 1
    assert message.startswith(f"l.yaml:{line}: expires:") and "YYYY-MM-DD" in message
    assert "^" not in message  # no regex shown to the user


def test_an_unquoted_date_where_text_is_expected_is_still_refused_with_quote_it():
    text = (SAMPLE / "leases" / "penguins.yaml").read_text().replace("id: penguins", "id: 2026-01-01")
    with pytest.raises(BadInputError) as caught:
        leases.parse_lease(text, "l.yaml")
    assert "got a date: quote it" in caught.value.one_line()


# --- relconsole schema NAME ------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_relconsole_schema_prints_the_shipped_file(name, capsys):
    code = main(["schema", name])
    out = capsys.readouterr().out
    assert code == EXIT_PASS and json.loads(out) == on_disk(name)


@pytest.mark.parametrize("args", [["schema"], ["schema", "--list"]])
def test_relconsole_schema_without_a_name_lists_every_schema(args, capsys):
    code = main(args)
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert code == EXIT_PASS and listed == list(NAMES)


@pytest.mark.parametrize("name", ["nope", "catalogs", "../catalog", ""])
def test_relconsole_schema_with_an_unknown_name_exits_64_with_one_line(name, capsys):
    code = main(["schema", name])
    captured = capsys.readouterr()
    assert code == EXIT_USAGE and captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and "catalog" in captured.err


# --- init and demo point editors at a copy beside the catalog --------------------------------

def _resolves(root: Path, relative: str) -> None:
    """Every YAML oracle file under ``root/oracle`` starts with a modeline whose relative path
    names a copy of the shipped schema the engine validates that file with."""
    kinds = {"catalog.yaml": "catalog", "leases": "lease", "quarantine": "candidate"}
    found = 0
    for path in sorted((root / relative).rglob("*.yaml")):
        key = path.name if path.parent == root / relative else path.parent.name
        if key not in kinds:
            continue
        text = path.read_text()
        match = MODELINE.match(text)
        assert match, path
        target = (path.parent / match.group(1)).resolve()
        assert target.name == f"{kinds[key]}.schema.json"
        assert json.loads(target.read_text()) == on_disk(kinds[key])
        found += 1
    assert found >= 2


def test_init_writes_a_modeline_naming_a_copy_of_the_schema_and_the_files_still_load(tmp_path, capsys):
    root = committed_repo(tmp_path / "kit", {
        "kit/__init__.py": "def dumps(rows):\n    return rows\n\n\ndef loads(rows):\n    return rows\n",
        "data/words.csv": "word,lang\nhello,en\nhola,es\n", "README.md": "# kit\n"},
        identity=("Rita Reviewer", "rita@example.org"), message="kit")
    code = main(["init", "--repo", str(root), "--corpus", "data/words.csv", "--subject", "kit:dumps",
                 "--today", TODAY.isoformat()])
    capsys.readouterr()
    assert code == EXIT_PASS
    git(root, "checkout", "-q", "--", ".")
    git(root, "reset", "-q", "--hard")
    _resolves(root, "oracle")
    assert catalog.load_catalog((root / "oracle/catalog.yaml").read_text(), "catalog.yaml")
    lease_path = root / "oracle/leases/words.yaml"
    assert leases.parse_lease(lease_path.read_text(), "words.yaml").id == "words"
    assert plain("lease").is_valid(editor_view(lease_path))
    assert plain("catalog").is_valid(editor_view(root / "oracle/catalog.yaml"))
    for path in (root / "oracle/quarantine").glob("*.yaml"):
        assert plain("candidate").is_valid(editor_view(path))


def test_the_sample_and_the_agents_catalog_start_with_the_modeline():
    """The sample's YAML oracle files (and the agent patch's copy of the catalog, so its diff
    does not drop the line) name the copies ``demo`` writes beside the catalog."""
    for path in [SAMPLE / "catalog.yaml", *SAMPLE.glob("leases/*.yaml"), *SAMPLE.glob("quarantine/*.yaml"),
                 ROOT / "sample_repo/.agent_patch/05-loosen-catalog/files/oracle/catalog.yaml"]:
        match = MODELINE.match(path.read_text())
        assert match, path
        inside = path.as_posix().split("/oracle/", 1)[1]  # e.g. leases/penguins.yaml
        target = posixpath.normpath(posixpath.join("oracle", posixpath.dirname(inside), match.group(1)))
        assert target in {f"oracle/schemas/{n}.schema.json" for n in NAMES}


def test_demo_writes_the_schema_copies_its_modelines_name(tmp_path):
    from relconsole.engine.demo import materialise
    root = materialise(tmp_path / "demo", today=TODAY)
    _resolves(root, "oracle")
    tracked = git(root, "ls-files", "--", "oracle/schemas").split()
    assert sorted(tracked) == sorted(f"oracle/schemas/{n}.schema.json" for n in NAMES)
