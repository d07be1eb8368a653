"""Defaults the command line shows in ``--help`` before it loads the engine part that uses
them (a ``run`` must not pay for importing ``confirm``, ``propose`` or the lease store).
The engine modules use these same names; nothing here imports anything."""

CONFIRM_RUNS = 3  # runs per side in each of the two replays of a candidate (§10)
CONFIRM_SIDES = ("head", "base")
DRAFTER_TIMEOUT_SECONDS = 300.0  # a drafter (propose) is stopped after this long
WORKSPACE_TTL_SECONDS = 600.0  # a workspace lease's TTL (§5)
