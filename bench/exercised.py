"""What recording the tree's executed lines costs a relation run (issue 35: covered means
exercised; target: at most 1.3x the same relation unmeasured).

A generated library (``textlib``) with two relations over hand-written seeds, each run through
the engine (``runner.run_all``: worker, fork server, one child per call, sandbox where there is
one) three ways, interleaved round by round (``RunPlan.record_lines``): unmeasured (the anchor),
recording the lines a review asks for (a patch that rewrote the subject: its statements,
``runplans.wanted_lines``), and recording every line of the tree (for the record):

  typical   an idempotence over short texts: what a library's relation usually is, where
            forking, importing and the wire are most of a call
  loop      the same relation over texts of ``--chars`` characters walked one by one in a
            Python loop: the tracer's worst case, a ``line`` event per character

Prints each relation's median seconds each way and the ratio per round (median) against the
target for ``typical``. A review's record never traces code with no changed line and stops
tracing a code object once each of its changed lines ran; ``loop`` rewrites the whole
function, so its last line keeps the loop traced to the end: a line event per character is the
bound of a line tracer in Python (coverage.py's C tracer, or ``sys.monitoring`` on Python
3.12, would cut it).

Usage: python -m bench.exercised [--repeat 5] [--chars 20000]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gitrepo import write_files  # noqa: E402
from bench.timing import interleaved, round_ratios, verdict  # noqa: E402
from relconsole.engine.gate import exercised  # noqa: E402
from relconsole.engine.oracle.catalog import load_catalog  # noqa: E402
from relconsole.engine.relations.records import RunPlan  # noqa: E402
from relconsole.engine.relations.runner import run_all  # noqa: E402

TARGET = 1.3
LIBRARY = {
    "textlib/__init__.py": "from textlib.squash import squash, squash_slowly\n",
    "textlib/squash.py": '''\
def squash(text):
    """Collapse runs of whitespace."""
    return " ".join(text.split())


def squash_slowly(text):
    """Collapse runs of whitespace, one character at a time."""
    out, space = [], False
    for ch in text:
        if ch.isspace():
            space = bool(out)
            continue
        if space:
            out.append(" ")
            space = False
        out.append(ch)
    return "".join(out)
''',
}
CATALOG = """\
relations:
  - id: text.{name}
    kind: idempotence
    subject: textlib:{subject}
    input: {{seeds: oracle/seeds/{name}.jsonl}}
    compare: exact
    statement: Squashing twice is squashing once.
"""


def make_tree(tree: Path, chars: int) -> None:
    long_texts = ["  ".join(f"word{n}" for n in range(chars // 8)) + " tail " * k for k in range(3)]
    write_files(tree, {**LIBRARY,
                       "oracle/seeds/typical.jsonl": '"a  b"\n"  x y   z "\n"plain"\n',
                       "oracle/seeds/loop.jsonl": "".join(json.dumps(t) + "\n" for t in long_texts)})


def plan(tree: Path, name: str, subject: str, record: "bool | tuple") -> RunPlan:
    catalog = load_catalog(CATALOG.format(name=name, subject=subject), "oracle/catalog.yaml")
    [relation] = catalog.relations.values()
    made = RunPlan(relation, tree, [str(tree)], "seeds", tree / relation.seeds_path, "pin", 300.0, None,
                   protected=("oracle/**",))
    return dataclasses.replace(made, record_lines=record, replay_seed=7)


def changed_lines(subject: str) -> tuple:
    """What a review records when a patch rewrote ``subject`` (every statement of it changed):
    ``RunPlan.record_lines`` as ``runplans.wanted_lines`` gives it."""
    text = LIBRARY["textlib/squash.py"]
    lines = text.splitlines()
    first = next(n for n, line in enumerate(lines, 1) if line.startswith(f"def {subject}("))
    last = next((n - 1 for n, line in enumerate(lines, 1) if n > first and line.startswith("def ")), len(lines))
    return exercised.wanted_rows({"textlib/squash.py": exercised.changed_statements(text, set(range(first, last + 1)))})


def one_run(plans: list[RunPlan]) -> None:
    [result] = run_all([(p, None) for p in plans], workers=1)
    if result.outcome != "held":
        raise SystemExit(f"{result.relation_id} did not hold: {result.summary}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chars", type=int, default=20000)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-exercised-"))
    ok = True
    try:
        tree = scratch / "textlib"
        make_tree(tree, args.chars)
        for name, subject in (("typical", "squash"), ("loop", "squash_slowly")):
            runs = interleaved({"unmeasured": lambda: one_run([plan(tree, name, subject, False)]),
                                "every line": lambda: one_run([plan(tree, name, subject, True)]),
                                "changed": lambda: one_run([plan(tree, name, subject, changed_lines(subject))])},
                               args.repeat, warmup=1)
            every = statistics.median(round_ratios(runs, "every line", "unmeasured"))
            ratio = statistics.median(round_ratios(runs, "changed", "unmeasured"))
            print(f"{name:8} unmeasured {statistics.median(runs['unmeasured']):6.3f} s (anchor)   "
                  f"changed lines {statistics.median(runs['changed']):6.3f} s   ratio {ratio:.2f}x "
                  + (f"(target: <= {TARGET}x: {verdict(ratio <= TARGET)})   " if name == "typical" else
                     "(the tracer's worst case, for the record)   ") +
                  f"every line {statistics.median(runs['every line']):6.3f} s   ratio {every:.2f}x (for the record)")
            ok = ok and (name != "typical" or ratio <= TARGET)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
