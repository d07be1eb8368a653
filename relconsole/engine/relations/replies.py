"""The judge worker's reply for a relation that ran: the outcome, its outputs trimmed to the disagreeing keys (SPEC §7).

A reply line carries the two canonical outputs back to the caller; a large one (a roundtrip
over a whole corpus) is cut down to the entries at the keys that disagreed (``trimmed``).
"""

from __future__ import annotations

import json

REPLY_LIMIT = 1 << 20  # bytes of one canonical output sent back in full


def outcome_reply(outcome) -> dict:
    """The reply mapping of an ``Outcome`` (``kinds.evaluate``'s): held (and not vacuous),
    the two outputs (``trimmed``), the disagreeing keys, the note and how they compared."""
    return {"held": outcome.held and not outcome.vacuous,
            "source": trimmed(outcome.source, outcome.differing),
            "followup": trimmed(outcome.followup, outcome.differing),
            "differing": outcome.differing, "note": outcome.note, "vacuous": outcome.vacuous,
            "compared": outcome.compared}


def trimmed(value, differing: list[str]):
    """``value`` when its JSON is small; else only the entries at the disagreeing keys.

    A roundtrip over a 336k-row corpus would otherwise send the whole corpus back twice.
    """
    text = json.dumps(value, default=repr)
    if len(text) <= REPLY_LIMIT:
        return value
    kept = {"(trimmed)": f"{len(text)} bytes; showing the disagreeing keys only"}
    for dotted in differing[:50]:
        node = value
        for part in dotted.split("."):
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                node = "(not found)"
                break
        kept[dotted] = node
    return kept
