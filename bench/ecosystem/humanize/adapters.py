"""Adapters of the humanize oracle (bench/ecosystem): strict parsers that read humanize's
text back into numbers (the inverses of its formatters), and formatters called with the
options a relation needs. They import humanize from the tree under review and store no
expected answer: each parser accepts only text of the documented shape, and gives text of
any other shape back unread (a string, which equals no number: the relation misses and shows
it). They never raise on the library's output: relconsole counts an adapter that raises as the
oracle's fault (abort), not the patch's miss.
"""

from __future__ import annotations

import re
from decimal import Decimal

import humanize

_GROUPED = re.compile(r"-?\d{1,3}(,\d{3})*")
_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)")
_WHOLE = re.compile(r"-?\d+")
_DECIMAL = re.compile(r"-?\d+(\.\d+)?")
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_DECIMAL_UNITS = ("kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")
_POWERS = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12, "quadrillion": 15,
           "quintillion": 18, "sextillion": 21, "septillion": 24, "octillion": 27, "nonillion": 30,
           "decillion": 33, "googol": 100}


def uncomma(text: str) -> int | str:
    """A whole number written with a comma every three digits, read back."""
    if not _GROUPED.fullmatch(text):
        return text
    return int(text.replace(",", ""))


def ordinal_number(text: str) -> int | str:
    """An English ordinal ("1st", "12th", "22nd") read back; one with a suffix English does
    not use for its number ("13rd") is not an ordinal."""
    match = _ORDINAL.fullmatch(text)
    if not match:
        return text
    number, suffix = int(match.group(1)), match.group(2)
    tens, last = number % 100, number % 10
    expected = "th" if 11 <= tens <= 13 or last not in (1, 2, 3) else ("st", "nd", "rd")[last - 1]
    return number if suffix == expected else text


def ap_number(text: str) -> int | str:
    """An Associated Press number read back: a word for zero to nine, digits otherwise."""
    if text in _WORDS:
        return _WORDS.index(text)
    if not _WHOLE.fullmatch(text) or 0 <= int(text) < 10:
        return text
    return int(text)


def precise_size(size: int) -> str:
    """``naturalsize`` in decimal units with twelve decimals, so that nothing is rounded away."""
    return humanize.naturalsize(size, format="%.12f")


def size_bytes(text: str) -> int | str:
    """A decimal file size ("1.500000000000 kB", "12 Bytes", "1 Byte") read back in bytes."""
    number, _, unit = text.strip().partition(" ")
    if unit in ("Bytes", "Byte"):
        if not _WHOLE.fullmatch(number) or (unit == "Byte") != (abs(int(number)) == 1):
            return text
        return int(number)
    if unit not in _DECIMAL_UNITS or not _DECIMAL.fullmatch(number):
        return text
    return round(Decimal(number) * 1000 ** (_DECIMAL_UNITS.index(unit) + 1))


def intword_value(row: dict) -> int | str:
    """The number ``intword`` writes for ``row["n"]`` ("1.2 million"), read back (rounded as
    it printed it)."""
    text = humanize.intword(row["n"])
    number, _, unit = text.partition(" ")
    if not unit:
        return int(number) if _WHOLE.fullmatch(number) else text
    if unit not in _POWERS or not _DECIMAL.fullmatch(number):
        return text
    return int(Decimal(number) * 10 ** _POWERS[unit])
