"""``python tests/seeded_relconsole.py SEED ARGS...``: relconsole with its run seeds pinned.

A test that runs relconsole as a separate process cannot monkeypatch its seed draw, and a
drawn seed makes a flaky model subject miss or hold at random. This wrapper gives the same
model ``test_replay`` uses in-process: every first run draws SEED, and a replay's runs draw
SEED, SEED + 1, ... (one list shared by every relation and side, as replay draws it). It
only patches the judge's process; the subject's harness never sees it.
"""

from __future__ import annotations

import itertools
import sys

from relconsole.engine.gate.replay import replayrun

from relconsole.engine.relations import runner


def main() -> int:
    seed = int(sys.argv[1])
    replay_draws = itertools.count(seed)
    runner.run_seed = lambda plan: plan.replay_seed if plan.replay_seed is not None else seed
    replayrun.draw_seed = lambda: next(replay_draws)
    from relconsole.cli.main import main as relconsole_main
    return relconsole_main(sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
