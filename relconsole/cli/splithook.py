"""What ``relconsole check-split --hook`` (the pre-commit hook) checks, from what pre-commit and
git tell a hook.

pre-commit calls a ``pass_filenames: false`` hook the same way in every mode; the mode shows only
in the environment:

* ``pre-commit run --from-ref A --to-ref B`` (pre-commit.ci on a pull request, pre-commit/action
  with refs, the ``pre-push`` stage) exports ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF``
  (before pre-commit 2.x: ``PRE_COMMIT_ORIGIN``/``PRE_COMMIT_SOURCE``): the hook checks every
  commit of ``A..B`` (``RANGE``).
* ``git commit`` runs its pre-commit hook with ``GIT_INDEX_FILE`` set to the index it is
  committing: the hook checks that commit (``STAGED``).
* Anything else is ``pre-commit run`` by hand or ``pre-commit run --all-files`` (which exports
  nothing): the hook checks every commit of the branch since its merge base with the base ref,
  and what is staged on top (``BRANCH``). A pass there says the whole branch keeps the split,
  not merely that the last commit does.
"""

from __future__ import annotations

from collections.abc import Mapping

RANGE, STAGED, BRANCH = "range", "staged", "branch"

# (from, to) variable names, newest first: pre-commit exports both pairs since 2.x
REF_VARIABLES = (("PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF"), ("PRE_COMMIT_ORIGIN", "PRE_COMMIT_SOURCE"))


def hook_target(environ: Mapping[str, str]) -> tuple[str, str | None]:
    """``(RANGE, "FROM..TO")``, ``(STAGED, None)`` or ``(BRANCH, None)``: what the hook checks
    in ``environ`` (the rule in the module docstring). Raises ValueError when pre-commit gave one
    end of a range without the other (pre-commit itself refuses that; a hand-set variable)."""
    for from_name, to_name in REF_VARIABLES:
        start, end = environ.get(from_name, ""), environ.get(to_name, "")
        if start or end:
            if not (start and end):
                raise ValueError(f"{from_name} and {to_name} go together: got only "
                                 f"{from_name if start else to_name}")
            return RANGE, f"{start}..{end}"
    if environ.get("GIT_INDEX_FILE"):
        return STAGED, None
    return BRANCH, None
