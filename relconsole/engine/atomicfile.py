"""Atomic file writes: the one way relconsole replaces a file (SPEC §9 "writes files atomically").

A reader (another relconsole process, git, an editor, CI uploading artifacts) sees the old
file or the new one, never half of either: the bytes go to a new file beside the target
(created exclusively, under a random name, so two writers never share one), which then
replaces the target in one ``os.replace``.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path


def write_atomic(path: str | os.PathLike, data: bytes | str, *, executable: bool = False,
                 durable: bool = True, encoding: str = "utf-8") -> Path:
    """Replace the file at ``path`` with ``data`` (``str`` is encoded with ``encoding``);
    returns the path.

    The parent folders are created. A new file gets mode 0o666 (0o777 when ``executable``)
    less the umask; a file that exists keeps its permission bits. ``durable`` flushes the
    bytes to the disk (fsync) before the rename, so a crash leaves the old file or the whole
    new one; caches that are rebuilt when lost pass ``durable=False`` and skip the wait.

    Raises OSError when the folder cannot be written; the temporary file is removed then,
    and the target is untouched.
    """
    target = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else data
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.relconsole-{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777 if executable else 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def read_json_object(path) -> dict:
    """The JSON object in the file at ``path``; {} when it is missing, unreadable, not JSON or
    not an object (a record rebuilt next time, never an error)."""
    import json
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}

