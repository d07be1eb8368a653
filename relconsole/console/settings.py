"""The console's own preferences (the theme), kept per user, never in the reviewed repository.

Stored as JSON in ``$RELCONSOLE_CONFIG_DIR/console.json``, else in the user's config folder
(``config_dir``: platformdirs, ``~/.config/relconsole`` on Linux, honouring XDG_CONFIG_HOME).
An unreadable or malformed file is ignored (defaults apply); writes are atomic.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from relconsole.engine.atomicfile import write_atomic


def config_dir() -> Path:
    """relconsole's folder in the user's configuration (platformdirs: the platform's rule;
    the folder may not exist). The keymap and the preferences are read from it."""
    import platformdirs  # only when a path is needed: most starts never ask
    return platformdirs.user_config_path("relconsole")


def settings_path() -> Path:
    """Where the preferences live (the file may not exist): ``$RELCONSOLE_CONFIG_DIR``, else
    ``config_dir()``."""
    base = os.environ.get("RELCONSOLE_CONFIG_DIR")
    return (Path(base) if base else config_dir()) / "console.json"


def load_settings() -> dict:
    """The saved preferences, or ``{}`` when there are none or they do not parse."""
    try:
        data = json.loads(settings_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_setting(key: str, value: str) -> bool:
    """Set one preference (``atomicfile.write_atomic``). False when it cannot be written
    (read-only home, say): a preference is never worth an error."""
    data = load_settings()
    data[key] = value
    try:
        write_atomic(settings_path(), json.dumps(data, indent=2, sort_keys=True))
    except OSError:
        return False
    return True
