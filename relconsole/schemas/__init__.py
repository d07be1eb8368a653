"""The JSON Schemas (Draft 2020-12) of relconsole's files, shipped as package data.

``<name>.schema.json`` for each of ``NAMES``: the catalog (SPEC §3), a dataset lease
manifest and the fixture pins (§4), the freeze file (§6), a quarantined candidate (§10)
and the acks file (§9). Editors read these files (``relconsole schema NAME`` prints one);
the engine validates with the same files (``relconsole.engine.oracle.schemacheck``). This module
only reads them: it imports nothing heavier than ``json``, so the CLI can print a schema
without loading the validator.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

NAMES = ("catalog", "lease", "freeze", "pin", "candidate", "ack")
ID_BASE = "https://relconsole.invalid/schemas/"  # every file's ``$id`` is ID_BASE + its file name


def file_name(name: str) -> str:
    """``<name>.schema.json``. Raises KeyError for a name not in NAMES."""
    if name not in NAMES:
        raise KeyError(name)
    return f"{name}.schema.json"


@functools.cache
def text(name: str) -> str:
    """The installed file's text (UTF-8), read once. Raises KeyError for a name not in NAMES."""
    return resources.files(__name__).joinpath(file_name(name)).read_text("utf-8")


@functools.cache
def load(name: str) -> dict:
    """The schema ``name`` parsed, once per process: callers share it and must not mutate it.
    Raises KeyError for a name not in NAMES."""
    return json.loads(text(name))
