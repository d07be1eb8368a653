"""Adapters of the tomlkit oracle (bench/ecosystem): plain data out of a parsed document,
and a document rebuilt from that data through tomlkit's own building API.

They import tomlkit from the tree under review, never store an expected answer, and turn
dates and times into tagged ISO text so that every output is plain data.
"""

from __future__ import annotations

import datetime as dt

import tomlkit


def _plain(value):
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return [type(value).__name__, value.isoformat()]
    return value


def document_data(text: str) -> dict:
    """The value a TOML document holds, as plain data (tomlkit's ``unwrap``)."""
    return _plain(tomlkit.parse(text).unwrap())


def rebuilt(text: str) -> str:
    """The document's value written again by tomlkit from scratch: a new document filled
    key by key with the unwrapped values, then dumped (no text of the source survives)."""
    doc = tomlkit.document()
    for key, value in tomlkit.parse(text).unwrap().items():
        doc[key] = value
    return tomlkit.dumps(doc)
