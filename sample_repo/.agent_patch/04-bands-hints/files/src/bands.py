"""Deduplicate leg-band readings from the field tablets.

A band scanned twice on one visit is one sighting. The tablets keep a compact set of
salted band fingerprints instead of the band ids themselves (memory stays flat over a
season's readings), and draw a fresh salt per batch so that crafted ids cannot pile into
one bucket.
"""

from __future__ import annotations

import hashlib
import random

FINGERPRINT_BITS = 29
SALT_BYTES = 8


def fingerprint(band: str, salt: bytes) -> int:
    """The band's ``FINGERPRINT_BITS``-bit fingerprint under ``salt`` (blake2b, keyed)."""
    digest = hashlib.blake2b(band.encode("utf-8"), digest_size=8, key=salt).digest()
    return int.from_bytes(digest, "big") >> (64 - FINGERPRINT_BITS)


def sightings(readings: list[str]) -> list[str]:
    """The distinct band ids among ``readings`` (strings such as ``"PB-00417"``), sorted.

    A reading whose fingerprint was already seen in this batch counts as a repeat scan.
    Raises TypeError when a reading is not a string.
    """
    salt = random.getrandbits(8 * SALT_BYTES).to_bytes(SALT_BYTES, "big")
    seen: set[int] = set()
    kept: list[str] = []
    for band in readings:
        if not isinstance(band, str):
            raise TypeError(f"a band id is a string, got {band!r}")
        mark = fingerprint(band, salt)
        if mark not in seen:
            seen.add(mark)
            kept.append(band)
    return sorted(kept)
