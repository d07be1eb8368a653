"""Where a reviewed repository keeps its oracle (SPEC §2), read from ``[tool.relconsole]``.

The layout is read from the base ref's ``pyproject.toml``, like the rest of the oracle,
so a patch cannot move its own gate.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass, field, fields, replace

import jsonschema

from relconsole.engine.errors import BadInputError


@dataclass(frozen=True)
class Layout:
    """Paths (repository-relative, POSIX) and policies of a reviewed repository.

    Days are calendar days; ``relation_timeout_seconds`` is wall-clock seconds.
    """

    catalog: str = "oracle/catalog.yaml"
    leases_dir: str = "oracle/leases"
    freezes: str = "oracle/freezes.json"
    acks: str = "oracle/acks.json"  # reviewers' acknowledgements of review flags (§9 review:)
    pins: str = "oracle/pins.json"
    quarantine_dir: str = "oracle/quarantine"
    seeds_dir: str = "oracle/seeds"
    protected: tuple[str, ...] = ("oracle/**",)
    import_paths: tuple[str, ...] | None = None  # None: repository root, plus src/ if present
    base_ref: str = "main"
    oracle_branch: str | None = None  # None: the base ref
    expiring_window_days: int = 7
    renew_max_days: int = 30
    relation_timeout_seconds: float = 120.0
    frozen_clock: str = "2026-01-01T00:00:00+00:00"
    require_sandbox: bool = False  # True: no bubblewrap sandbox is an abort, not a run as a plain process (§7)
    pass_env: tuple[str, ...] = ()  # names of variables handed from relconsole's environment to the subject
    # repository path -> the text of a module the build generates (a setuptools_scm version file):
    # written into every run tree whose commit has no file there, since git never has it
    generated: dict = field(default_factory=dict, compare=False)
    # a changed statement no relation ran (SPEC §3 covered means exercised): "gap" (exit 2 unless
    # worse) or "warn" (listed, no effect on the exit code)
    unexercised: str = "gap"
    # drawn inputs (SPEC §3): seconds a relation keeps drawing past its generate: N while a changed line
    # its calls reached the file of stays unreached; seconds a miss is shrunk for; rows of a drawn scaled copy
    generate_seconds: float = 2.0
    shrink_seconds: float = 30.0
    generate_rows: int = 12000
    # review flag kind or name -> "block" | "warn" | "off" (SPEC §9 flag levels; unset: the defaults)
    flags: dict = field(default_factory=dict, compare=False)
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def target_branch(self) -> str:
        """The branch console commits go onto (§9)."""
        return self.oracle_branch or self.base_ref


_STR = {"type": "string", "minLength": 1}
_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "catalog": _STR, "leases_dir": _STR, "freezes": _STR, "acks": _STR, "pins": _STR,
        "quarantine_dir": _STR, "seeds_dir": _STR, "base_ref": _STR, "oracle_branch": _STR,
        "protected": {"type": "array", "items": _STR},
        "import_paths": {"type": "array", "items": {"type": "string"}},
        "expiring_window_days": {"type": "integer", "minimum": 0},
        "renew_max_days": {"type": "integer", "minimum": 1},
        "relation_timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        "frozen_clock": _STR,
        "require_sandbox": {"type": "boolean"},
        # a subject sees no other variable of ours; none that would change its interpreter or tell it
        "pass_env": {"type": "array", "items": {
            "type": "string", "pattern": r"^(?!PYTHON|LD_|FAKETIME|RELCONSOLE|GIT_)[A-Za-z_][A-Za-z0-9_]*$"}},
        "generated": {"type": "object", "additionalProperties": {"type": "string"}},
        "unexercised": {"enum": ["gap", "warn"]},
        "generate_seconds": {"type": "number", "minimum": 0},
        "shrink_seconds": {"type": "number", "minimum": 0},
        "generate_rows": {"type": "integer", "minimum": 0},
        "flags": {"type": "object", "additionalProperties": {"enum": ["block", "warn", "off"]}},
    },
}


def check_instant(text: str, source: str, what: str, line: int | None = None) -> None:
    """Raise BadInputError unless ``text`` is an ISO 8601 instant (``2026-01-01T00:00:00+00:00``)."""
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        raise BadInputError(source, f"{what}: {text!r} is not an ISO 8601 instant "
                                    "(like 2026-01-01T00:00:00+00:00)", line) from None


def layout_from_pyproject(text: str | None, source: str = "pyproject.toml") -> Layout:
    """Build the Layout from ``pyproject.toml`` text (None or no section: defaults).

    Raises BadInputError (exit 5) for invalid TOML or an unknown or mistyped key.
    """
    if not text:
        return Layout()
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise BadInputError(source, f"invalid TOML: {exc.args[0] if exc.args else exc}", line) from None
    section = doc.get("tool", {}).get("relconsole")
    if section is None:
        return Layout()
    if isinstance(section.get("flags"), dict):  # environment_probe.randomness = "warn", unquoted: a nested table
        section = dict(section, flags=_dotted(section["flags"]))
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(_SCHEMA).iter_errors(section))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "[tool.relconsole]"
        raise BadInputError(source, f"[tool.relconsole] {where}: {error.message}")
    if "frozen_clock" in section:
        check_instant(section["frozen_clock"], source, "[tool.relconsole] frozen_clock")
    known = {f.name for f in fields(Layout)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in section.items() if k in known}
    _check_generated(values.get("generated") or {}, values.get("protected", Layout.protected), source)
    return replace(Layout(), **values)


def _dotted(table: dict, prefix: str = "") -> dict:
    """A TOML table of levels as flat dotted keys: ``{"environment_probe": {"randomness": "warn"}}``
    (what an unquoted ``environment_probe.randomness = "warn"`` parses to) gives
    ``{"environment_probe.randomness": "warn"}``; a name's own level stays under its name."""
    out = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_dotted(value, name + "."))
        else:
            out[name] = value
    return out


def _check_generated(stubs: dict, patterns, source: str) -> None:
    """A generated module's path is a relative POSIX path inside the tree (no leading ``/``, no
    ``.`` or ``..`` step, no backslash or NUL) and not a protected one: the oracle's files come
    from the base ref as committed, and a stub there would stand in for one. Raises BadInputError."""
    from relconsole.engine.repo.owners import protected
    for path in stubs:
        steps = path.split("/")
        if not path or path.startswith("/") or "\\" in path or "\0" in path or \
                any(step in ("", ".", "..") for step in steps):
            raise BadInputError(source, f"[tool.relconsole] generated: {path!r} is not a relative path inside the "
                                        "repository (like \"src/pkg/_version.py\")")
        if protected(tuple(patterns), path):
            raise BadInputError(source, f"[tool.relconsole] generated: {path!r} is under a protected path; "
                                        "a generated module is code the build writes, not an oracle file")
