"""Miss signatures (SPEC §7): what identifies a miss, without what varies between runs.

A signature is sha256 over test id, assertion id, fixture pin and the normalised
failure class. ``normalise`` strips what varies between honest runs of the same miss —
absolute and temporary paths, source line numbers, durations, timestamps (with a time
part), memory addresses, host names, IPv4 addresses and ports, request ids, UUIDs and
long hex ids, PIDs — and keeps what identifies it: the exception type, the relation id,
the disagreeing keys or rows (plain dates, small numbers, dotted key paths), messages'
words. Each stripped span becomes a placeholder in angle brackets (``<path>``,
``<time>``, ...), so two messages that differ only there normalise to the same text.
"""

from __future__ import annotations

import functools
import hashlib
import re
import socket
import tempfile

_HEX_ID = r"(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{16,}"
# Characters a path segment may hold (quotes, brackets, commas and ':' end a path).
_SEG = r"[^\s/\\:'\"()\[\]{}<>,;|]+"
_PATH_START = r"(?:^|(?<=[\s'\"(\[{=,;:]))"
_TEMP_ROOTS = ("/tmp/", "/var/tmp/", "/var/folders/", "/private/var/folders/", "/private/tmp/",
               "/dev/shm/", "/run/user/")
_SOURCE_NAME = re.compile(r"[A-Za-z_][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}")
_RANDOM_NAME = re.compile(r"tmp[a-z0-9_]{6,}|.*\d{3,}.*|pytest-\d+", re.I)
_TLDS = r"(?:com|net|org|io|dev|cloud|ai|co|edu|gov|info|biz|us|uk|de|fr|nl|eu|app)"

_TIMES = [
    # ISO 8601 / log style: a date with a time part (a plain YYYY-MM-DD is a key: kept).
    (r"\b\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?(?:Z|UTC|GMT)\b|[+-]\d{2}:?\d{2}\b)?",
     "<time>"),
    (r"(?<![\w.])1[4-9]\d{8}(?:\.\d+)?(?![\w.])", "<time>"),  # epoch seconds (2014..2033)
    (r"(?<![\w.])1[4-9]\d{11}(?![\w.])", "<time>"),  # epoch milliseconds
    (r"(?<![\w.])1[4-9]\d{17}(?![\w.])", "<time>"),  # epoch nanoseconds
]
_IDS = [
    (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "<id>"),
    (r"(?i)\b((?:x-)?(?:request|req|trace|span|correlation|session)[_ -]?id\b[\"']?\s*[=:]?\s*[\"']?)"
     r"(?!<id>)(?=[\w.-]*\d)[\w.-]+", r"\1<id>"),
    (r"(?<![0-9A-Za-z<])0x[0-9a-fA-F]{6,}(?![0-9A-Za-z])", "<addr>"),  # memory addresses
    (r"(?<![0-9A-Za-z])" + _HEX_ID + r"(?![0-9A-Za-z])", "<id>"),
    (r"(?<![\w.-])tmp[a-z0-9_]{8}(?![\w-])", "<tmp>"),  # tempfile's tmpXXXXXXXX names
    (r"(?i)\b(pid|process id|tid|thread id)(\s*[=:#]?\s*)\d+\b", r"\1\2<pid>"),
]
_NETWORK = [
    (r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?(?![\w.])", "<ip>"),
    (r"(?i)(?<![\w.-])ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[a-z0-9-]+)*", "<host>"),
    # FQDN of an internal host, or of a numbered host (worker-3.ci.example.com).
    (r"(?i)(?<![\w.<-])(?:[a-z-]*\d[a-z0-9-]*|[a-z0-9-]+\.[a-z0-9-]+)(?:\.[a-z0-9-]+)*"
     r"\.(?:internal|local|localdomain|lan)(?![\w-])", "<host>"),
    (r"(?i)(?<![\w.<-])[a-z-]*\d[a-z0-9-]*(?:\.[a-z0-9-]+){1,}\." + _TLDS + r"(?![\w.-])", "<host>"),
    (r"(?<=<host>):\d{1,5}\b|(?<=localhost):\d{1,5}\b", ":<port>"),
    (r"(?i)\b(port)(\s*[=:]?\s*)\d{2,5}\b", r"\1\2<port>"),
]
_DURATIONS = [
    (r"(?i)(?<![\w.])\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|msec|msecs|s|sec|secs|seconds?|min|mins|minutes?)(?![\w])",
     "<duration>"),
]


def _compile(pairs):
    return [(re.compile(p), r) for p, r in pairs]


def _path_sub(match: re.Match) -> str:
    """An absolute path: ``<tmp>`` under a temporary root, else ``<path>`` keeping a stable
    file name (``<path>/penguins.py``) so that which file failed still counts."""
    path = match.group(0)
    posix = path.replace("\\", "/")
    tmp = tempfile.gettempdir().replace("\\", "/").rstrip("/") + "/"
    if (posix.startswith(_TEMP_ROOTS) or posix.startswith(tmp) or "/pytest-of-" in posix
            or re.search(r"(?i)/appdata/local/temp/|/temp/", posix)):
        return "<tmp>"
    name = posix.rstrip("/").rsplit("/", 1)[-1]
    if _SOURCE_NAME.fullmatch(name) and not _RANDOM_NAME.fullmatch(name):
        return "<path>/" + name
    return "<path>"


_PATHS = [
    # Windows: C:\dir\file, C:/dir/file, \\server\share\dir
    re.compile(_PATH_START + r"(?:[A-Za-z]:[\\/]|\\\\" + _SEG + r"\\)(?:" + _SEG + r"[\\/])*(?:" + _SEG + r")?"),
    # POSIX: at least two segments (a lone "/health" may be a key), or ~/...
    re.compile(_PATH_START + r"~?/" + _SEG + r"(?:/" + _SEG + r")+/?"),
]
_LINES = re.compile(r"(?i)(\.(?:py|pyx|pyi)\"?(?:, line |:))\d+")
_PATTERNS = _compile(_TIMES) + _compile(_IDS) + _compile(_NETWORK) + _compile(_DURATIONS)


@functools.lru_cache(maxsize=1)
def _local_hosts() -> re.Pattern | None:
    """The local host names (``socket.gethostname()``, its short form and FQDN), 3+ chars."""
    names = set()
    for name in (socket.gethostname(), socket.getfqdn()):
        for candidate in (name, name.split(".")[0]):
            if len(candidate) >= 3 and candidate.lower() != "localhost":
                names.add(candidate)
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(r"(?i)(?<![\w.<-])(?:" + alternatives + r")(?![\w>-])")


def _one_pass(text: str) -> str:
    text = _LINES.sub(r"\1<n>", text)
    for pattern in _PATHS:
        text = pattern.sub(_path_sub, text)
    hosts = _local_hosts()
    if hosts is not None:
        text = hosts.sub("<host>", text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def normalise(text: str) -> str:
    """Strip what varies between honest runs from a failure message (§7); idempotent.

    Whitespace runs (newlines too) collapse to one space. Applied until nothing changes,
    so ``normalise(normalise(t)) == normalise(t)`` for any text.
    """
    for _ in range(16):
        new = _one_pass(text)
        if new == text:
            return new
        text = new
    return text


def failure_class(error_type: str | None, differing: list[str], message: str = "") -> str:
    """The normalised failure class (§7): ``raised <type>`` (plus the normalised first line of
    ``message`` when given), or ``disagree`` with the sorted, normalised disagreeing keys."""
    if error_type:
        first = next((line for line in message.splitlines() if line.strip()), "")
        return f"raised {error_type}" + (f": {normalise(first)}" if first else "")
    return "disagree " + ",".join(sorted(normalise(d) for d in differing))


def signature(test_id: str, assertion_id: str, fixture_pin: str, failure: str) -> str:
    """``sha256:<hex>`` over the four parts, NUL-separated."""
    digest = hashlib.sha256("\0".join([test_id, assertion_id, fixture_pin, failure]).encode())
    return "sha256:" + digest.hexdigest()
