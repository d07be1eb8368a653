"""A committed file's text as its reader sees it (SPEC §9: the review flags judge what Python runs).

A Python file is decoded as Python decodes it (its PEP 263 coding cookie), anything else as
UTF-8; ``reads_otherwise`` tells when the two readings differ (flag ``source_rewritten``).
"""

from __future__ import annotations

def source_text(path: str, data: bytes) -> str:
    """The text of a file as its reader sees it: a Python file decoded as Python decodes it
    (its PEP 263 coding cookie: ``utf-7`` or ``raw_unicode_escape`` can turn a comment into
    code), anything else as UTF-8. Undecodable bytes become U+FFFD."""
    if path.endswith((".py", ".pyw")):
        encoding = python_encoding(data)
        if encoding is not None:
            try:
                return data.decode(encoding, "replace")
            except (LookupError, UnicodeError, TypeError):
                pass
    return data.decode("utf-8-sig", "replace")


def python_encoding(data: bytes) -> str | None:
    """The source encoding Python reads ``data`` with (``tokenize.detect_encoding``), or
    None when it names none Python accepts (Python then refuses the file)."""
    if _plainly_utf8(data):
        return "utf-8"
    import io
    import tokenize
    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return None


def _plainly_utf8(data: bytes) -> bool:
    """Whether ``tokenize.detect_encoding`` would surely answer ``utf-8`` without reading
    ``data``: no BOM and no ``coding`` in the two lines it may read, and those lines ASCII
    (it decodes them, and a line that is not UTF-8 raises). Anything else goes to it."""
    head = data.split(b"\n", 2)[:2]
    return all(line.isascii() and b"coding" not in line for line in head)


def reads_otherwise(data: bytes | None) -> str | None:
    """The encoding of a Python file whose text differs from its UTF-8 reading, else None."""
    if not data:
        return None
    encoding = python_encoding(data)
    if encoding in (None, "utf-8", "utf-8-sig"):
        return None
    try:
        decoded = data.decode(encoding)
    except (LookupError, UnicodeError, TypeError):
        return None
    return None if decoded == data.decode("utf-8-sig", "replace") else encoding
