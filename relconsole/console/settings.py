"""The console's own preferences (the theme), kept per user, never in the reviewed repository.

Stored as JSON in ``$RELCONSOLE_CONFIG_DIR/console.json``, else
``$XDG_CONFIG_HOME/relconsole/console.json``, else ``~/.config/relconsole/console.json``.
An unreadable or malformed file is ignored (defaults apply); writes are atomic.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def settings_path() -> Path:
    """Where the preferences live (the file may not exist)."""
    base = os.environ.get("RELCONSOLE_CONFIG_DIR")
    if base:
        return Path(base) / "console.json"
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(xdg) / "relconsole" / "console.json"


def load_settings() -> dict:
    """The saved preferences, or ``{}`` when there are none or they do not parse."""
    try:
        data = json.loads(settings_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_setting(key: str, value: str) -> bool:
    """Set one preference (temp file + ``os.replace``). False when it cannot be written
    (read-only home, say): a preference is never worth an error."""
    path = settings_path()
    data = load_settings()
    data[key] = value
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".console-", dir=path.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        return False
    return True
