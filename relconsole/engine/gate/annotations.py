"""A gate decision as GitHub Actions workflow commands (``::error file=…,line=…::…``): the
annotations a pull request shows on its diff in a repository without code scanning.

One line per ``findings.findings`` entry, on the same place SARIF gives it (a whole-file place
gets no ``line``), and one ``::error`` per ``findings.failures`` entry (the machine's, with no
file unless it has one): ``error`` for a finding that rejects or aborts, ``warning`` for a
hold or a warning, ``notice`` for a note (a freeze, an acknowledged flag, a lease warning).

Hostile text cannot make a second command: every value first goes through the project's
escaping (``literal.one_line``: control characters, newlines and format characters become
visible escapes), then through GitHub's workflow-command escaping (``%``, CR and LF in the
message; also ``:`` and ``,`` in a property), so each finding is exactly one line.
"""

from __future__ import annotations

from relconsole.engine.literal import one_line

COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}
MAX_MESSAGE = 4000  # characters of one annotation's message (GitHub shows a few lines of it)
MAX_TITLE = 200


def escape_data(text: object) -> str:
    """``text`` as a workflow command's message: one line (``one_line``), then ``%``, CR and LF
    percent-encoded as the runner decodes them."""
    return one_line(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: object) -> str:
    """``text`` as a workflow command's property value: ``escape_data``, then ``:`` and ``,``
    percent-encoded too (they end a value)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: object, properties: dict | None = None) -> str:
    """``::kind name=value,…::message``, every value and the message escaped; properties whose
    value is None are left out."""
    props = ",".join(f"{name}={escape_property(value)}" for name, value in (properties or {}).items()
                     if value is not None)
    return f"::{kind}{' ' + props if props else ''}::{escape_data(_cut(message, MAX_MESSAGE))}"


def _cut(text: object, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _line(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _place(place) -> dict:
    if place is None:
        return {}
    line, end = _line(place.line), _line(place.end)
    return {"file": place.path, "line": line, "endLine": end if line is not None and end is not None and end > line
            else None}


def annotations(payload: dict) -> list[str]:
    """Every annotation line of ``payload`` (a decision.json mapping), findings first (the
    deciding ones first: GitHub shows only the first few of a step), then failures."""
    from relconsole.engine.gate import findings as found
    from relconsole.engine.gate.rulehelp import RULES, help_uri
    out = []
    shown = [(COMMANDS.get(f.level, "error"), f) for f in found.findings(payload)]
    shown += [("error", f) for f in found.failures(payload)]
    for kind, item in shown:
        rule = RULES.get(item.rule)
        title = f"relconsole {item.rule}" + (f": {rule.title}" if rule else "")
        message = _cut(item.message, MAX_MESSAGE - MAX_TITLE)  # the link stays whole
        message = f"{message} (what to do: {help_uri(item.rule)})" if rule else message
        out.append(command(kind, message, _place(item.place) | {"title": _cut(title, MAX_TITLE)}))
    return out
