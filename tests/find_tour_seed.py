"""Find a run seed for the demo's tour (``engine.demo.TOUR_RUN_SEED``): one whose run of the
sample's ``bands.repeat_scans`` meets a fingerprint collision, so the tour's first run misses.

The sample's miss is rare by design (about one run in 360,000), so drawing seeds through the
real fork server would take days. This runs the judge's own code (``worker.Server.answer``:
the call order, each call's subject seed, the repeated calls) over a fake fork server that
calls the sample's ``sightings`` in this process, seeded as the harness seeds a call, and
prints each run seed whose calls meet a collision. A seed found here is then checked with the
real engine: ``relconsole run --replay-seed SEED`` on the sample's ``agent/patch`` must show
``bands.repeat_scans`` missed (and ``tests/test_console_tour.py`` must pass with it).

Usage: python -m tests.find_tour_seed SAMPLE_CHECKOUT [START] [COUNT]
(SAMPLE_CHECKOUT: ``relconsole demo --into DIR --no-open``, then ``git -C DIR checkout main``)
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

RELATION = "bands.repeat_scans"
CLOCK = "2026-11-30T12:00:00"


def main(argv: list[str]) -> int:
    sample = Path(argv[0]).resolve()
    start, count = (int(argv[1]) if len(argv) > 1 else 0), (int(argv[2]) if len(argv) > 2 else 1_000_000)
    sys.path.insert(0, str(sample / "src"))
    import bands  # the sample's subject, imported here only: this is a maintainer's tool, not the judge
    import yaml

    from relconsole.engine.relations import worker
    from relconsole.engine.relations.subject.inputs import build_input
    from relconsole.engine.relations.subject.results import CallResult

    catalog = yaml.safe_load((sample / "oracle/catalog.yaml").read_text(encoding="utf-8"))
    relation = next(r for r in catalog["relations"] if r["id"] == RELATION)
    seeds_path = sample / relation["input"]["seeds"]
    rows = [json.loads(line) for line in seeds_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    met: list[int] = []

    def collides(readings: list[str]) -> bool:
        state = random.getstate()
        salt = random.getrandbits(64).to_bytes(8, "big")  # the draw sightings() makes next
        random.setstate(state)
        marks = [bands.fingerprint(band, salt) for band in set(readings)]
        return len(set(marks)) < len(marks)

    class FakeForkServer:
        sandbox, hashseed, clock, frozen_at, instant = "process", 0, None, None, None

        class proc:
            @staticmethod
            def poll():
                return None

        def ready(self): pass
        def give_input(self, wire): pass
        def close(self): pass

        def call(self, spec, timeout, expect=None):
            random.seed(spec["seed"])
            value = build_input(rows[spec["seed_row"]], spec["ops"], {})
            out = None
            for given in ([value[::-4], value[::-4], value] if spec.get("repeat") == 2 else [value]):
                if collides(given):
                    met.append(spec["seed"])
                out = bands.sightings(given)
            return CallResult(status="ok", body={"ok": out})

    class Judge(worker.Server):
        def enter(self, request): self.root = request["root"]
        def fork_server(self, request): return FakeForkServer()
        def second_server(self, request, first): return None
        def merge_adapter(self, relation): return None

    judge = Judge()
    for seed in range(start, start + count):
        met.clear()
        judge.answer({"root": str(sample), "import_paths": [str(sample / "src")], "relation": relation,
                      "seed": seed, "clock": CLOCK, "protected": ["oracle/**"],
                      "input": {"kind": "seeds", "path": str(seeds_path)}})
        if met:
            print(seed, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
