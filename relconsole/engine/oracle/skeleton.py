"""Keys and text read the way a reviewer reads them (SPEC §10: no answers, no skip, no freeze fields).

Keys are compared through a *skeleton* (NFKC, format and combining characters
dropped, common Cyrillic and Greek look-alikes mapped to Latin, split into words at
separators and camelCase), so ``Expected_Total``, ``expectedTotal``, `` expected ``,
``еxpected`` (Cyrillic е) and ``ex\\u200bpected`` all read as ``expected``. The candidate
rules (``candidaterules``) and the id rule (``candidateids.id_key``) read keys through it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from relconsole.engine.oracle.catalog import answer_like

FREEZE_KEYS = {"freeze", "reruns", "pass_needed", "expires", "signature", "lease_id"}
_ANSWER_WORDS = frozenset({"expected", "expect", "expects", "expectation", "expectations", "result",
                           "results", "output", "outputs", "answer", "answers", "golden", "truth"})
_ANSWER_STEMS = ("expected", "result", "output", "answer")  # also glued to a word: expectedtotal
_SKIP_WORDS = frozenset({"skip", "skipif", "skipunless", "skiptest", "importorskip"})
_FREEZE_WORDS = frozenset({"freeze", "freezes", "frozen", "rerun", "reruns", "expires", "expiry",
                           "signature"})
_FREEZE_COMPACT = frozenset({"passneeded", "leaseid", "maxdays", "minreruns"})
# Latin look-alikes in Cyrillic and Greek (NFKC keeps them apart from Latin letters).
_LOOKALIKES = str.maketrans({
    "а": "a", "с": "c", "ԁ": "d", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j",
    "к": "k", "ӏ": "l", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s", "у": "y", "х": "x", "ԝ": "w",
    "ı": "i", "ȷ": "j", "ɡ": "g",
    "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M",
    "О": "O", "Р": "P", "Ѕ": "S", "Т": "T", "Х": "X", "У": "Y",
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
})
_CHUNK = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def skeleton(text: str) -> str:
    """``text`` with compatibility forms folded (NFKC), accents, zero-width and other format
    characters dropped, control characters made spaces and Cyrillic/Greek look-alikes mapped
    to Latin letters. Case is kept (camelCase still splits)."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    kept = []
    for char in decomposed:
        category = unicodedata.category(char)
        if category in ("Mn", "Me", "Cf"):
            continue
        kept.append(" " if category == "Cc" else char)
    return "".join(kept).translate(_LOOKALIKES)


def _chunks(text: str) -> list[str]:
    """Runs of ASCII letters and digits in the skeleton of ``text``."""
    return _CHUNK.findall(skeleton(text))


def _words(text: str) -> list[str]:
    """Lower-case words of ``text``: chunks split at camelCase and digit boundaries."""
    return [word.lower() for chunk in _chunks(text) for word in _CAMEL.findall(chunk)]


def answer_key(key: Any) -> bool:
    """True for a key that names a stored answer in any spelling: ``Expected_Total``,
    ``expectedTotal``, ``expected-total``, `` expected ``, ``totalexpected``, ``еxpected``."""
    text = str(key)
    if answer_like(text.strip()):
        return True
    words = _words(text)
    if any(word in _ANSWER_WORDS for word in words):
        return True
    compact = "".join(words)
    return compact.startswith(_ANSWER_STEMS) or compact.endswith(_ANSWER_STEMS) \
        or compact.endswith(tuple(stem + "s" for stem in _ANSWER_STEMS))


def skip_text(text: str) -> bool:
    """True when ``text`` carries a skip or xfail mark in any spelling (``pytest.mark.skip``,
    ``@skip``, ``skipIf``, ``skip_if``, ``self.skipTest``, ``importorskip``, ``XFail``), but
    not for words that merely contain "skip" (``skipping``, ``skipper``)."""
    for chunk in _chunks(text):
        lowered = chunk.lower()
        if "xfail" in lowered or lowered in _SKIP_WORDS:
            return True
        if any(word.lower() in _SKIP_WORDS for word in _CAMEL.findall(chunk)):
            return True
    return False


def freeze_key(key: Any) -> bool:
    """True for a key that belongs to the freeze file (§6) in any spelling: ``Freeze``,
    ``passNeeded``, ``min-reruns``, ``freeze_until``, ``lease id``."""
    text = str(key)
    if text.strip() in FREEZE_KEYS:
        return True
    words = _words(text)
    compact = "".join(words)
    return any(word in _FREEZE_WORDS for word in words) or compact in _FREEZE_COMPACT \
        or compact.startswith(("freez", "frozen", "rerun"))
