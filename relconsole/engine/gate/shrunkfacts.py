"""The smallest input a miss was shrunk to, as every front end shows it first (SPEC §3, §7).

``shrunk_facts(record)`` reads a run record's ``shrunk`` and ``drawn`` parts (the worker's
``drawnrun``) into one ``ShrunkFacts``: the input itself, what it is in words, the two outputs
on it (or the error), the keys that disagreed, and, for a drawn row, the fields the miss needs.
``shrunk_lines`` are the lines ``run`` and ``gate`` print before the whole input's outputs;
``shrunk_json`` the gate payload's part (the summary, SARIF and the console read it). All
text inside is untrusted: a printer passes it through ``literal.one_line``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from relconsole.engine.literal import counted
from relconsole.engine.relations.records import RunRecord, compact_text, short_pair

INPUT_CHARS = 600  # characters of the shrunk input shown on one line


@dataclass
class ShrunkFacts:
    """One shrunk miss: ``input`` (the rows or the drawn value), ``what`` it is in words,
    ``source``/``followup`` outputs on it (None with an ``error``), ``differing`` keys,
    ``note`` (which follow-up missed), ``fields`` a drawn row's miss needs, ``tries``
    (candidates judged) and ``seconds``, ``whole`` (the input it was shrunk from, in words)."""

    input: Any
    what: str
    whole: str
    source: Any = None
    followup: Any = None
    differing: list[str] = field(default_factory=list)
    error: str = ""
    note: str = ""
    fields: list[str] = field(default_factory=list)
    tries: int = 0
    seconds: float = 0.0
    rows: int | None = None  # corpus rows in the input (None for a drawn value)
    advice: str = ""  # for a miss only a drawn row shows: what the catalog keeper may tighten instead


def shrunk_facts(record: RunRecord | None) -> ShrunkFacts | None:
    """The record's shrunk miss, or None when it has none (it held, or its miss was on a
    seed row or could not be shrunk)."""
    shrunk = (record.shrunk if record is not None else None) or {}
    if "input" not in shrunk:
        return None
    drawn = record.drawn or {}
    recipe = shrunk.get("recipe") or {}
    value = shrunk["input"]
    error = shrunk.get("error") if isinstance(shrunk.get("error"), dict) else None
    facts = ShrunkFacts(value, "", "", shrunk.get("source"), shrunk.get("followup"),
                        [str(d) for d in shrunk.get("differing") or []],
                        f"{error.get('type')}: {error.get('message', '')}" if error else "",
                        str(shrunk.get("note") or ""), [str(f) for f in shrunk.get("fields") or []],
                        int(shrunk.get("candidates") or 0), float(shrunk.get("seconds") or 0.0))
    if "value" in recipe:
        facts.what = f"a drawn input (run seed {record.seed})"
        facts.whole = "the drawn input before shrinking"
        facts.advice = drawn_advice(facts.fields)
    else:
        facts.rows = len(value) if isinstance(value, list) else None
        total = shrunk.get("from_rows")
        missed_on = drawn.get("missed_on") or {}
        of = (f"a drawn input's {total} rows ({missed_on.get('label')})" if missed_on.get("label")
              else f"the corpus's {total} rows")
        facts.what = f"{counted(facts.rows or 0, 'row')} of {of}"
        facts.whole = "the drawn input before shrinking" if missed_on else "the whole corpus"
    return facts


def drawn_advice(fields: list[str]) -> str:
    """What a miss only a drawn row shows means, for the two people who read it: the relation's
    own seeds held, so the drawn value is either inside what the subject takes (the patch is
    wrong there) or outside it (the schema is too wide: a catalog keeper tightens the field)."""
    named = f"{', '.join(fields)} " if fields else ""
    return (f"only a drawn input misses (the relation's own seeds hold): if its {named}value is one the subject "
            "is meant to take, the patch is wrong there; if not, the catalog's input schema is too wide: tighten "
            "the field (min, max, choices, pattern) or set generate: 0, in a catalog: commit")


def input_text(value: Any, limit: int = INPUT_CHARS) -> str:
    """``value`` as compact JSON, cut to about ``limit`` characters."""
    return compact_text(value, limit)


def shrunk_lines(facts: ShrunkFacts) -> list[str]:
    """The lines a text report prints for a shrunk miss, indented under its relation: the
    smallest input, then the two outputs on it (or the error) and the keys."""
    shrunk_how = f" (shrunk in {counted(facts.tries, 'try', 'tries')})" if facts.tries else ""
    lines = [f"    smallest input: {facts.what}{shrunk_how}: {input_text(facts.input)}"]
    if facts.fields:
        lines.append(f"    the miss needs: {', '.join(facts.fields)} (the other fields at their simplest value)")
    if facts.advice:
        lines.append(f"    {facts.advice}")
    if facts.error:
        lines.append(f"    on it: raised {facts.error}")
    else:
        source, followup = short_pair(facts.source, facts.followup)
        keys = f"  (disagree on {', '.join(facts.differing[:6])})" if facts.differing else ""
        lines.append(f"    on it: source {source}  follow-up {followup}{keys}")
    return lines


def shrunk_json(record: RunRecord | None) -> dict | None:
    """The gate payload's ``shrunk`` part of a relation (None without one): the input in
    words and as cut JSON, the two outputs cut around where they differ, the keys, the error,
    the fields a drawn row needs, tries and seconds."""
    facts = shrunk_facts(record)
    if facts is None:
        return None
    source, followup = short_pair(facts.source, facts.followup) if not facts.error else ("", "")
    return {"what": facts.what, "whole": facts.whole, "input": input_text(facts.input), "rows": facts.rows,
            "source": source, "followup": followup, "differing": facts.differing[:50], "error": facts.error,
            "note": facts.note, "fields": facts.fields, "tries": facts.tries, "seconds": facts.seconds,
            "advice": facts.advice}
