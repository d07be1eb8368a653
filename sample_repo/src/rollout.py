"""A percentage rollout: which users see a feature at a given percentage.

Each user falls in a stable bucket 0..99 (sha256 of salt + user id), and is admitted
when the bucket is below the percentage, so raising the percentage never drops a user.
"""

from __future__ import annotations

import hashlib


def user_ids(population: int) -> list[str]:
    """The ids ``u00000 .. u{population-1}``, zero-padded to five digits, in order."""
    return [f"u{i:05d}" for i in range(population)]


def bucket(salt: str, user_id: str) -> int:
    """The user's bucket, 0..99: sha256 of ``salt + user_id`` taken modulo 100."""
    digest = hashlib.sha256((salt + user_id).encode("utf-8")).digest()
    return int.from_bytes(digest, "big") % 100


def admitted(x: dict) -> list[str]:
    """Users admitted by one rollout setting.

    ``x``: ``{"percent": int 0..100, "salt": str, "population": int >= 0}``.
    Returns the sorted list of admitted user ids. Raises ValueError for a percent
    outside 0..100 or a negative population, KeyError for a missing key.
    """
    percent, salt, population = x["percent"], x["salt"], x["population"]
    if not 0 <= percent <= 100:
        raise ValueError(f"percent must be within 0..100, got {percent}")
    if population < 0:
        raise ValueError(f"population must not be negative, got {population}")
    return sorted(uid for uid in user_ids(population) if bucket(salt, uid) < percent)
