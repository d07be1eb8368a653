"""Byte-preserving edits (SPEC §9): only the intended bytes change, the parse says so."""

from __future__ import annotations

import datetime
import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.engine.errors import BadInputError, UsageError
from relconsole.engine.oracle.textedit import (append_catalog_relation, append_jsonl_rows, remove_jsonl_lines,
                                        set_lease_expires, upsert_freeze_row)

TRICKY = ["yes", "no", "on", "off", "2026-01-01", "1e3", "0x1F", "0o17", "1_000", ".inf", "-.5", "12:30",
          "[bold]", "{x}", "- a", "#x", "a: b", "a #b", "null", "~", "", " lead", "trail ", "multi\nline",
          "tab\there", "\u00fcn\u00ef", "nel\x85", "cr\r", "\ufeffbom", "'q'", '"dq"', "@at", "`bt`", "%p",
          "*star", "&amp", "!bang", "|pipe",
          ">gt", "?q", ",", "=", "<<", "\u2028sep"]

keys = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
scalars = (st.sampled_from(TRICKY) | st.text(max_size=20) | st.integers() | st.booleans() | st.none()
           | st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
                      max_leaves=8)
rows = st.fixed_dictionaries({"id": st.sampled_from(["orders.new", "2026-01-01", "yes", "a b"]),
                              "kind": st.sampled_from(["permutation", "bound"])},
                             optional={"subject": st.sampled_from(TRICKY), "params": values,
                                       "statement": st.text(max_size=40), "quantum": scalars})
comment_texts = st.sampled_from(["# note", "#", "# - id: commented.out", "# relations: []", "#: x"])


@st.composite
def catalogs(draw):
    """A block catalog in one of many human layouts, and the same text less a ``[]`` placeholder."""
    indent = draw(st.sampled_from([2, 4]))
    dash = draw(st.sampled_from([0, indent]))
    gap = draw(st.sampled_from([2, indent]))
    lines: list[str] = []

    def noise(columns):
        for _ in range(draw(st.integers(0, 2))):
            if draw(st.booleans()):
                lines.append("")
            else:
                lines.append(" " * draw(st.sampled_from(columns)) + draw(comment_texts))

    noise([0])
    lines += ["owners:", " " * indent + '"src/**": [a.b]   # src']
    count = draw(st.integers(0, 5))
    placeholder = None
    if count == 0 and draw(st.booleans()):
        comment = draw(st.sampled_from(["", "  # none yet"]))
        placeholder = (len(lines), "relations:" + (" " + comment if comment else ""))
        lines.append("relations: []" + comment)
    elif count == 0:
        lines.append("relations:")
    else:
        lines.append("relations:" + draw(st.sampled_from(["", "  # the list"])))
    pad = " " * (dash + gap)
    for i in range(count):
        lines.append(" " * dash + "-" + " " * (gap - 1) + f"id: r{i}" + draw(st.sampled_from(["", "   # id"])))
        lines.append(pad + "kind: permutation")
        if draw(st.booleans()):
            lines += [pad + "input:", pad + " " * indent + "seeds: oracle/seeds/x.jsonl"]
        if draw(st.booleans()):
            lines.append(pad + "params: {shuffles: 6, seed: 7}")
        noise([0, dash, dash + gap])
    noise([0, dash + gap])
    if draw(st.booleans()):
        lines += ["notes:", " " * indent + "- keep me"]
        noise([0])
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    end = newline if draw(st.booleans()) else ""
    text = newline.join(lines) + end
    if placeholder is not None:
        lines[placeholder[0]] = placeholder[1]
    return text, newline.join(lines) + end


def inserted_between(original: str, new: str) -> bool:
    """True when ``new`` is ``original`` with one contiguous block inserted."""
    prefix = 0
    while prefix < min(len(original), len(new)) and original[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(original), len(new)) and original[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return len(new) > len(original) and prefix + suffix >= len(original)


def typed(value):
    """A value with its types spelled out, so True != 1 and "1" != 1 in comparisons."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


@settings(max_examples=300, deadline=None)
@given(catalogs(), rows)
def test_append_keeps_every_other_byte_and_parses_to_old_plus_row(catalog, row):
    text, base = catalog
    new = append_catalog_relation(text, row, "oracle/catalog.yaml")
    old_data, new_data = yaml.safe_load(text), yaml.safe_load(new)
    assert typed(new_data) == typed({**old_data, "relations": (old_data["relations"] or []) + [row]})
    assert list(new_data) == list(old_data)
    assert not any(char in new for char in "\x85\u2028\u2029")  # escaped: same string in YAML 1.1 and 1.2
    assert inserted_between(base, new)
    if "\r\n" in text:
        assert "\n" not in new.replace("\r\n", "")
    assert new.endswith(("\n", "\r\n")) == text.endswith(("\n", "\r\n"))


@settings(max_examples=100, deadline=None)
@given(rows)
def test_append_indents_like_the_existing_items(row):
    text = "relations:\n    -   id: a\n        kind: permutation\n"
    new = append_catalog_relation(text, row, "c.yaml")
    added = new[len(text):].rstrip("\n").split("\n")
    assert added[0].startswith("    -   ")
    assert all(line.startswith(" " * 8) or line == "" for line in added[1:])


def test_append_quotes_strings_yaml_would_misread():
    row = {"id": "x", "kind": "bound", "on": "yes", "when": "2026-12-31", "style": "[bold]", "n": "007"}
    new = append_catalog_relation("relations:\n  - id: a\n    kind: bound\n", row, "c.yaml")
    assert new.endswith("  - id: x\n    kind: bound\n    'on': 'yes'\n    when: '2026-12-31'\n"
                        "    style: '[bold]'\n    n: '007'\n")
    assert yaml.safe_load(new)["relations"][1] == row


def test_append_to_a_json_catalog_keeps_it_json():
    text = '{\n  "owners": {},\n  "relations": [\n    {"id": "a", "kind": "bound"}\n  ]\n}\n'
    new = append_catalog_relation(text, {"id": "b", "kind": "bound"}, "catalog.json")
    assert new == '{\n  "owners": {},\n  "relations": [\n    {"id": "a", "kind": "bound"},\n' \
                  '    {"id": "b", "kind": "bound"}\n  ]\n}\n'
    assert json.loads(new)["relations"][1] == {"id": "b", "kind": "bound"}
    assert json.loads(append_catalog_relation('{"relations": []}', {"id": "b"}, "c.json")) == {
        "relations": [{"id": "b"}]}


@settings(max_examples=100, deadline=None)
@given(rows, st.booleans())
def test_append_to_json_catalogs_round_trips(row, pretty):
    text = json.dumps({"owners": {}, "relations": [{"id": "a"}]}, indent=2 if pretty else None)
    new = append_catalog_relation(text, row, "catalog.json")
    assert typed(json.loads(new))  # a JSON catalog is read as JSON == typed({"owners": {}, "relations": [{"id": "a"}, row]})
    assert inserted_between(text, new)


def test_append_keeps_a_trailing_key_and_its_comments():
    text = ("relations:\n  - id: a   # first\n    kind: bound\n    # about a\n\n"
            "# Section: notes\nnotes: keep\n")
    new = append_catalog_relation(text, {"id": "b", "kind": "bound"}, "c.yaml")
    assert new == ("relations:\n  - id: a   # first\n    kind: bound\n    # about a\n"
                   "  - id: b\n    kind: bound\n\n# Section: notes\nnotes: keep\n")


def test_append_before_a_document_end_marker():
    text = "---\nrelations:\n  - id: a\n...\n"
    assert append_catalog_relation(text, {"id": "b"}, "c.yaml") == "---\nrelations:\n  - id: a\n  - id: b\n...\n"


@pytest.mark.parametrize("text", ["owners: {}\n", "relations: 3\n", "- a\n", "", "relations: {a: 1}\n",
                                  "relations: [\n"])
def test_append_refuses_a_catalog_without_a_relations_list(text):
    with pytest.raises(BadInputError) as caught:
        append_catalog_relation(text, {"id": "b"}, "oracle/catalog.yaml")
    assert caught.value.path == "oracle/catalog.yaml"


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60).map(lambda t: t + "\n") | st.just(""),
       st.lists(st.dictionaries(keys, scalars.filter(lambda v: not isinstance(v, float)), max_size=3), max_size=4))
def test_jsonl_remove_undoes_append(text, new_rows):
    appended = append_jsonl_rows(text, new_rows)
    old_count = text.count("\n")
    added = set(range(old_count + 1, old_count + len(new_rows) + 1))
    assert remove_jsonl_lines(appended, added) == text
    lines = appended.split("\n")
    assert [json.loads(line) for line in lines[old_count:old_count + len(new_rows)]] == new_rows


@given(st.lists(st.text(alphabet="ab{}\"\r\u2028", max_size=5), max_size=6), st.booleans(), st.data())
def test_jsonl_remove_keeps_other_lines_byte_for_byte(segments, final_newline, data):
    text = "\n".join(segments) + ("\n" if final_newline and segments else "")
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    drop = data.draw(st.sets(st.integers(1, len(lines)))) if lines else set()
    kept = "".join(line for number, line in enumerate(lines, 1) if number not in drop)
    assert remove_jsonl_lines(text, drop) == kept


def test_jsonl_edge_cases():
    assert append_jsonl_rows('{"a": 1}', [{"b": "\u00e9"}]) == '{"a": 1}\n{"b": "\u00e9"}\n'
    assert append_jsonl_rows('{"a": 1}\r\n', [{"b": 2}]) == '{"a": 1}\r\n{"b": 2}\r\n'
    assert append_jsonl_rows("", [{"b": 2}]) == '{"b": 2}\n'
    assert remove_jsonl_lines('{"a": 1}\n{"b": 2}\n', {1, 2}) == ""
    assert remove_jsonl_lines('{"a": 1}\n{"b": 2}', {2}) == '{"a": 1}\n'
    with pytest.raises(UsageError):
        remove_jsonl_lines('{"a": 1}\n', {2})


MANIFEST_LINES = ["id: orders_v3", "path: oracle/data/orders_v3.csv   # the corpus",
                  "sha256: '0123456789e12345678901234567890123456789012345678901234567890123'",
                  "owner: alice@example.com", "allowed_relations: [orders.order_invariant]"]


@settings(max_examples=200, deadline=None)
@given(st.permutations(range(len(MANIFEST_LINES) + 1)), st.sampled_from(["", "'", '"']),
       st.sampled_from(["", "   # renew monthly", "  #"]), st.sampled_from(["\n", "\r\n"]),
       st.dates(min_value=datetime.date(2000, 1, 1), max_value=datetime.date(2999, 12, 31)), st.booleans())
def test_set_lease_expires_changes_only_that_line(order, quote, comment, newline, new_date, final):
    expires_line = f"expires: {quote}2026-12-31{quote}{comment}"
    pool = MANIFEST_LINES + [expires_line]
    text = newline.join(pool[i] for i in order) + (newline if final else "")
    new = set_lease_expires(text, new_date, "oracle/leases/orders_v3.yaml")
    old_lines, new_lines = text.splitlines(keepends=True), new.splitlines(keepends=True)
    assert len(old_lines) == len(new_lines)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b]
    position = order.index(len(MANIFEST_LINES))
    assert changed == ([position] if new_date != datetime.date(2026, 12, 31) else [])
    assert new_lines[position].rstrip("\r\n") == f"expires: {quote}{new_date.isoformat()}{quote}{comment}"
    old_data, new_data = yaml.safe_load(text), yaml.safe_load(new)
    assert new_data == {**old_data, "expires": new_date.isoformat() if quote else new_date}


def test_set_lease_expires_errors_and_empty_value():
    with pytest.raises(BadInputError, match="expires"):
        set_lease_expires("id: x\nsha256: 'ab'\n", datetime.date(2026, 1, 1), "lease.yaml")
    with pytest.raises(BadInputError):
        set_lease_expires("id: x\nexpires: [2026-01-01]\n", datetime.date(2026, 1, 1), "lease.yaml")
    assert set_lease_expires("id: x\nexpires:\nowner: a\n", datetime.date(2026, 2, 1), "l") == (
        "id: x\nexpires: 2026-02-01\nowner: a\n")
    assert set_lease_expires('{"id": "x", "expires": "2026-01-01"}', datetime.date(2026, 2, 1), "l") == (
        '{"id": "x", "expires": "2026-02-01"}')


def _freeze(relation_id: str, **extra) -> dict:
    row = {"relation_id": relation_id, "expires": "2026-01-10", "reruns": 5, "pass_needed": 5,
           "reason": "flaky \u2014 CI"}
    return dict(row, **extra)


def test_upsert_freeze_row():
    row = _freeze("a")
    assert json.loads(upsert_freeze_row(None, row, "f.json")) == [row]
    assert json.loads(upsert_freeze_row("  \n", row, "f.json")) == [row]
    text = json.dumps([_freeze("b"), _freeze("a", reruns=1, pass_needed=1)])
    out = upsert_freeze_row(text, row, "f.json")
    assert json.loads(out) == [_freeze("b"), row]
    assert out == json.dumps([_freeze("b"), row], indent=2, ensure_ascii=False) + "\n"
    assert json.loads(upsert_freeze_row(out, _freeze("c"), "f.json"))[-1] == _freeze("c")


def test_upsert_freeze_row_refuses_a_file_with_a_skip_row():
    text = json.dumps([_freeze("b", skip=True)], indent=2)
    with pytest.raises(BadInputError) as caught:
        upsert_freeze_row(text, _freeze("a"), "oracle/freezes.json")
    skip_line = next(n for n, line in enumerate(text.split("\n"), 1) if '"skip"' in line)
    assert caught.value.line == skip_line and "skip" in caught.value.message


@pytest.mark.parametrize(("text", "line"), [('[\n  {"relation_id": "a",}\n]', 2), ('{"relation_id": "a"}', 1)])
def test_upsert_freeze_row_refuses_malformed_files(text, line):
    with pytest.raises(BadInputError) as caught:
        upsert_freeze_row(text, {"relation_id": "a"}, "oracle/freezes.json")
    assert (caught.value.path, caught.value.line) == ("oracle/freezes.json", line)
