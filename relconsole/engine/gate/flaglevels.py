"""How much each review flag weighs (SPEC §9 as updated by issue 35): ``block`` rejects until a
reviewer who is not the patch's author acknowledges it, ``warn`` is shown everywhere and leaves
the decision alone, ``off`` is not raised.

A flag's *kind* is its name, and for ``environment_probe`` its name and what the probe reads
(``environment_probe.randomness``), since a random draw and a read of the parent's pid weigh
differently: the first is what a sampling function is for, the second what a patch that
behaves only under the judge needs. The base's ``[tool.relconsole] flags`` sets a level per
kind or per name (a kind's setting wins over its name's); anything unset takes
``DEFAULT_LEVELS``.

The defaults were chosen by measurement (``bench/ecosystem.py``: real upstream commits of two
libraries replayed as PRs, and the hostile patches of ``tests/test_hostile_subjects.py``):
``block`` for what is rare in honest code and typical of a patch that games the gate (oracle,
lease, corpus and freeze edits, the layout, source rewrites and encoding cookies, reading the
process's parentage, namespaces, modules, frames or ``sys.path``, running code no reviewer can
read, and, measured on the hostile patches, clock reads and state kept from call to call:
four of them hold on every relation and are caught by those flags alone); ``warn`` for what
honest libraries write every week and no hostile patch needed (random draws, optional
imports, environment reads).

How a hostile patch would use a ``warn`` kind: a subject that draws at random to pass a
sampled relation still meets the relation on every seed the judge draws, and a cache that
answers a second call differently is caught by the judge's repeated calls (``history``); an
environment read that only differs under the judge needs a variable the subject's
environment does not carry (``pass_env``). Each stays visible to the reviewer.
"""

from __future__ import annotations

import re

BLOCK, WARN, OFF = "block", "warn", "off"
LEVELS = (BLOCK, WARN, OFF)

# what an environment_probe reads, from the words of its detail: the first pattern that
# matches names the kind (a detail matching none is "environment_probe.other", which blocks)
PROBE_KINDS = (
    ("randomness", re.compile(r"draws random|random numbers|random bytes")),
    ("optional_import", re.compile(r"chooses its code by what can be imported")),
    ("cache", re.compile(r"keeps state from call to call")),
    ("environment", re.compile(r"\(reads the environment\)|reads the environment\b")),
    ("clock", re.compile(r"reads the clock")),
)

DEFAULT_LEVELS = {
    "protected_path_changed": BLOCK, "lease_hash_edited": BLOCK, "leased_corpus_edited": BLOCK,
    "freeze_row_added": BLOCK, "freeze_row_edited": BLOCK, "golden_literal": BLOCK,
    "bag_output_sorted": BLOCK, "ingest_replay_to_concat": BLOCK, "oracle_layout_changed": BLOCK,
    "relation_changed": BLOCK, "patch_catalog_invalid": BLOCK, "environment_probe": BLOCK,
    "source_rewritten": BLOCK, "test_harness_changed": BLOCK,
    "environment_probe.randomness": WARN, "environment_probe.optional_import": WARN,
    "environment_probe.environment": WARN,
    # measured: four hostile patches (a frozen clock looked for, a day salted into a bucket, a call
    # counter, a closure's table) hold on every relation and are caught by these flags alone
    "environment_probe.clock": BLOCK, "environment_probe.cache": BLOCK,
}


def probe_kind(detail: str) -> str:
    """What a probe's words say it reads (``PROBE_KINDS``), ``other`` when none matches."""
    for kind, pattern in PROBE_KINDS:
        if pattern.search(detail):
            return kind
    return "other"


def flag_kind(flag) -> str:
    """The flag's kind: its name, or ``environment_probe.<what it reads>`` (``probe_kind``)."""
    if flag.name != "environment_probe":
        return flag.name
    return f"environment_probe.{probe_kind(flag.detail)}"


def known_kinds() -> list[str]:
    """Every name or kind ``[tool.relconsole] flags`` may set, sorted."""
    from relconsole.engine.gate.patchflags import FLAG_NAMES
    return sorted({*FLAG_NAMES, *DEFAULT_LEVELS, "environment_probe.other"})


def flag_level(flag, configured: dict | None = None) -> str:
    """``block``, ``warn`` or ``off`` for ``flag`` under ``configured`` (the base's
    ``[tool.relconsole] flags``: kind or name -> level), else ``DEFAULT_LEVELS``."""
    configured = configured or {}
    kind = flag_kind(flag)
    for key in (kind, flag.name):
        if key in configured:
            return configured[key]
    return DEFAULT_LEVELS.get(kind, DEFAULT_LEVELS.get(flag.name, BLOCK))


def check_flag_levels(configured: dict, source: str = "pyproject.toml") -> None:
    """Raise BadInputError (exit 5) naming the first key of ``[tool.relconsole] flags`` that is
    no flag name or kind (``known_kinds``): a misspelt key would silently change nothing."""
    from relconsole.engine.errors import BadInputError
    known = set(known_kinds())
    for key in configured:
        if key not in known:
            raise BadInputError(source, f"[tool.relconsole] flags: {key!r} is no review flag or kind "
                                        f"(one of {', '.join(sorted(known))})")
