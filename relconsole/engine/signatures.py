"""Miss signatures (SPEC §7): what identifies a miss, without what varies between runs.

A signature is sha256 over test id, assertion id, fixture pin and the normalised
failure class. The failure class keeps the exception type and the disagreeing keys and
drops paths, addresses, durations and numbers that differ between honest runs.
"""

from __future__ import annotations

import hashlib
import re

_VARYING = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),  # memory addresses
    (re.compile(r"(/[^\s/:'\"]+)+"), "<path>"),  # absolute and temporary paths
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ][\d:.]+(Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)?\s*(ms|s|seconds)\b"), "<duration>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<id>"),
]


def normalise(text: str) -> str:
    """Strip what varies between honest runs from a failure message (idempotent)."""
    for pattern, replacement in _VARYING:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def failure_class(error_type: str | None, differing: list[str]) -> str:
    """The normalised failure class: exception type, or the sorted disagreeing keys."""
    if error_type:
        return f"raised {error_type}"
    return "disagree " + ",".join(sorted(normalise(d) for d in differing))


def signature(test_id: str, assertion_id: str, fixture_pin: str, failure: str) -> str:
    """``sha256:<hex>`` over the four parts, NUL-separated."""
    digest = hashlib.sha256("\0".join([test_id, assertion_id, fixture_pin, failure]).encode())
    return "sha256:" + digest.hexdigest()
