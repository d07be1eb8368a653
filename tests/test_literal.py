"""The one escaping sink (``relconsole.engine.literal``) shows every invisible or controlling
character as a visible escape: control characters (Cc), and Unicode format characters (Cf:
bidi marks and isolates, zero-width joiners, a word joiner, a soft hyphen, a BOM, tags),
line and paragraph separators and lone surrogates (a file name's bytes that are not UTF-8).

Properties over any text: no such character is left; the result is its own escape (layers
that each escape compose); and for text without a backslash the escape can be undone, so
two different paths never print the same (a path with U+2060 printed as a name it is not).
"""

from __future__ import annotations

import re
import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from relconsole.engine.literal import literal, one_line

ESCAPED = {"Cc", "Cf", "Zl", "Zp", "Cs"}
# every format character this interpreter's Unicode knows (163 in Unicode 14), found by category
FORMAT = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
UNDECODABLE = [bytes([b]).decode("utf-8", "surrogateescape") for b in range(0x80, 0x100)]
ODD = FORMAT + UNDECODABLE + [chr(c) for c in range(0x20)] + [chr(c) for c in range(0x7F, 0xA1)] + [
    "\u2028", "\u2029", "\ud800", "\udfff", "\xa0", "\u3000", "\ue000", "\U0010ffff", "é", "東"]
texts = st.lists(st.one_of(st.characters(), st.sampled_from(ODD)), max_size=40).map("".join)
plain = texts.map(lambda t: t.replace("\\", "/"))
_ESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|n|t)")


def _shown_wrongly(text: str, keep: str = "") -> list[str]:
    return [c for c in text if unicodedata.category(c) in ESCAPED and c not in keep]


def _undo(shown: str) -> str:
    """Text ``one_line`` made ``shown`` from, for text that had no backslash: each escape back
    to its character (``\\xNN`` above 0x7F is a byte that was not UTF-8)."""
    def back(match: re.Match) -> str:
        body = match.group(1)
        if body in ("n", "t"):
            return {"n": "\n", "t": "\t"}[body]
        code = int(body[1:], 16)
        if body[0] == "x" and code >= 0x80:
            return bytes([code]).decode("utf-8", "surrogateescape")
        return chr(code)
    return _ESCAPE.sub(back, shown)


@given(texts)
def test_no_control_or_format_character_is_left(text):
    assert _shown_wrongly(one_line(text)) == []
    assert _shown_wrongly(literal(text), keep="\t\n") == []
    assert literal(text).count("\n") == text.count("\n")  # literal keeps the lines


@given(texts)
def test_the_escape_is_its_own_escape(text):
    shown = one_line(text)
    assert one_line(shown) == shown and literal(literal(text)) == literal(text)


@given(plain)
def test_text_without_a_backslash_can_be_read_back(text):
    """Injective where it can be: an escape starts with a backslash and has a fixed width."""
    assert _undo(one_line(text)) == text


@given(plain, plain)
def test_two_different_paths_never_print_the_same(one, other):
    if one != other:
        assert one_line(one) != one_line(other)


def test_every_format_character_is_escaped_by_its_code_point():
    assert len(FORMAT) > 100  # the list is Unicode's, not a handful
    for char in FORMAT:
        shown = literal(f"a{char}b")
        assert char not in shown and f"{ord(char):04x}" in shown, (hex(ord(char)), shown)


def test_the_characters_that_hide_a_name_are_escaped():
    """Soft hyphen, zero-width non-joiner and joiner, word joiner, bidi marks, embeddings,
    overrides and isolates, BOM: each makes a path read as another."""
    for code in (0x00AD, 0x200C, 0x200D, 0x2060, 0x200E, 0x200F, *range(0x202A, 0x202F),
                 *range(0x2066, 0x206A), 0xFEFF):
        path = f"src/pay{chr(code)}ment.py"
        shown = one_line(path)
        assert shown != "src/payment.py" and shown.isprintable() and shown.isascii(), (hex(code), shown)


def test_ordinary_unicode_and_spaces_stay_as_they_are():
    for text in ("Zürich ✓ 東京", "a\xa0b", "ﬁle", "emoji 🙂", "tab\there\nnext"):
        assert literal(text) == text


def test_a_byte_that_was_not_utf8_and_a_c1_character_print_differently():
    byte = b"\x85".decode("utf-8", "surrogateescape")
    assert one_line(byte) != one_line("\x85")
    assert one_line(b"\xad".decode("utf-8", "surrogateescape")) != one_line("\u00ad")
