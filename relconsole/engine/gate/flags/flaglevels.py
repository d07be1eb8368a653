"""How much each review flag weighs (SPEC §9 as updated by issue 35): ``block`` rejects until a
reviewer who is not the patch's author acknowledges it, ``warn`` is shown everywhere and leaves
the decision alone, ``off`` is not raised.

A flag's *kind* is its name, and for ``environment_probe`` its name and what the probe reads
(``environment_probe.randomness``), since a random draw and a read of the parent's pid weigh
differently: the first is what a sampling function is for, the second what a patch that
behaves only under the judge needs; for ``packaging_changed`` what the setting decides
(``packaging_changed.layout``: where the shipped code comes from; a dependency bump weighs
less). The base's ``[tool.relconsole] flags`` sets a level per
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
imports, literal assertions in tests: a new one is the regression test of a bug fix, and an
expected answer edited with the code is how a fix updates a test that pinned the old output,
3 of 70 measured PRs; it is also how a patch makes its tests agree with it, so a team that
reads tests as evidence sets ``golden_literal = "block"``). Environment reads block: the judge's environment carries almost no variable, so
reading one tells it from production (red team, issue 35).

How a hostile patch would use a ``warn`` kind: a subject that draws at random to pass a
sampled relation still meets the relation on every seed the judge draws, and an optional
import chooses between two implementations the relations judge alike where both are
reachable. Each stays visible to the reviewer.
"""

from __future__ import annotations

import re

BLOCK, WARN, OFF = "block", "warn", "off"
LEVELS = (BLOCK, WARN, OFF)

# what an environment_probe reads, from the rule's own words at the start of its detail: the
# first pattern that matches names the kind ("other", which blocks, when none does). Each is
# anchored and names only what the probe tables hold ("uses <a dotted name of the tables>
# (<the table's words>)"), never text the patch wrote: a string literal quoted in a detail
# ("names '/proc/self/status draws random numbers'") cannot pick a kind (red team, issue 35)
PROBE_KINDS = (
    ("randomness", re.compile(r"uses (random\.\w+|secrets\.\w+|os\.urandom|uuid\.uuid4) \(draws random ")),
    ("optional_import", re.compile(r"chooses its code by what can be imported \(the judge and production")),
    ("cache", re.compile(r"keeps state from call to call \(")),
    ("environment", re.compile(r"uses os\.(environ|environb|getenv|getenvb|path\.expandvars) \(reads the environment\)")),
    ("clock", re.compile(r"uses [\w.]+ \(reads the clock|reads the clock \(\.\w+(\(\))?\)")),
)

# a golden_literal's kind, from the rule's own words at the start of its detail: an answer
# that moved (an expected value edited together with the code it checks) or a new assertion
GOLDEN_MOVED = re.compile(r"moves the expected answer of ")

DEFAULT_LEVELS = {
    "protected_path_changed": BLOCK, "lease_hash_edited": BLOCK, "leased_corpus_edited": BLOCK,
    "freeze_row_added": BLOCK, "freeze_row_edited": BLOCK, "golden_literal": WARN,
    # measured (bench/ecosystem.py, 70 honest upstream PRs): 25 add 80 literal assertions on calls the
    # relations reach (a bug fix with its regression test) and 3 edit an expected answer with the
    # code it checks (a fix of tomlkit's multiline strings, two translation fixes of humanize):
    # blocking either would stop more honest PRs than the 95% target allows, and the verdict rests
    # on the relations, which no test edit moves; both are shown to the reviewer everywhere
    "golden_literal.moved": WARN, "golden_literal.added": WARN,
    "bag_output_sorted": BLOCK, "ingest_replay_to_concat": BLOCK, "oracle_layout_changed": BLOCK,
    "relation_changed": BLOCK, "patch_catalog_invalid": BLOCK, "environment_probe": BLOCK,
    "source_rewritten": BLOCK, "test_harness_changed": BLOCK,
    "environment_probe.randomness": WARN, "environment_probe.optional_import": WARN,
    # measured by the red team: the judge's environment carries almost no variable, so any read
    # (len(os.environ), "USER" in os.environ) tells it from production
    "environment_probe.environment": BLOCK,
    # measured: four hostile patches (a frozen clock looked for, a day salted into a bucket, a call
    # counter, a closure's table) hold on every relation and are caught by these flags alone
    "environment_probe.clock": BLOCK, "environment_probe.cache": BLOCK,
    # measured (issue 36): 683 honest commits that touch packaging files (the last <= 200 of each of 9
    # libraries: tomlkit, humanize, toolz, hyperlink, cachetools, parver, pathspec, pre-commit, roman;
    # 5,223 commits in those spans) raise dependencies in 139, layout in 61, build in 58 (48 of them
    # edit a setup.py's own code), entry_points in 5, dependency_source in 2, and nothing in 477: the four
    # kinds that can ship or run code no relation judged are rare (one-off migrations, a new
    # subpackage) and block; requirement bumps are weekly work and warn
    "packaging_changed": BLOCK, "packaging_changed.layout": BLOCK, "packaging_changed.entry_points": BLOCK,
    "packaging_changed.build": BLOCK, "packaging_changed.dependency_source": BLOCK,
    "packaging_changed.dependencies": WARN,
}


def probe_kind(detail: str) -> str:
    """What a probe's words say it reads (``PROBE_KINDS``), ``other`` when none matches."""
    for kind, pattern in PROBE_KINDS:
        if pattern.match(detail):
            return kind
    return "other"


def flag_kind(flag) -> str:
    """The flag's kind: its name, ``environment_probe.<what it reads>`` (``probe_kind``),
    ``golden_literal.moved``/``golden_literal.added`` (``GOLDEN_MOVED``), or
    ``packaging_changed.<kind>`` (the rule's opening words, ``packagingkeys.KIND_WORDS``)."""
    if flag.name == "packaging_changed":
        from relconsole.engine.gate.flags.packagingkeys import KIND_WORDS
        kind = next((k for k, words in KIND_WORDS.items() if flag.detail.startswith(words + ":")), None)
        return f"packaging_changed.{kind}" if kind else flag.name
    if flag.name == "golden_literal":
        return "golden_literal.moved" if GOLDEN_MOVED.match(flag.detail) else "golden_literal.added"
    if flag.name != "environment_probe":
        return flag.name
    return f"environment_probe.{probe_kind(flag.detail)}"


def known_kinds() -> list[str]:
    """Every name or kind ``[tool.relconsole] flags`` may set, sorted."""
    from relconsole.engine.gate.flags.patchflags import FLAG_NAMES
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


def check_flag_levels(configured: dict, source: str = "pyproject.toml", text: str | None = None) -> None:
    """Raise BadInputError (exit 5) naming the first key of ``[tool.relconsole] flags`` that is
    no flag name or kind (``known_kinds``): a misspelt key would silently change nothing. With
    the file's ``text``, the error names the line that holds the key."""
    from relconsole.engine.errors import BadInputError
    known = set(known_kinds())
    for key in configured:
        if key not in known:
            raise BadInputError(source, f"[tool.relconsole] flags: {key!r} is no review flag or kind "
                                        f"(one of {', '.join(sorted(known))})", _line_of(key, text))


def _line_of(key: str, text: str | None) -> int | None:
    """The first line of ``text`` that names ``key`` as a TOML key (bare or quoted), or None."""
    pattern = re.compile(rf'(^|[{{,\s]){re.escape(key)}\s*=|["\']{re.escape(key)}["\']\s*=')
    for number, line in enumerate((text or "").splitlines(), 1):
        if pattern.search(line):
            return number
    return None
