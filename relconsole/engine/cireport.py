"""What CI systems read of a gate's decision (``gate.collect`` / ``gate.shard_payload``
payloads): text lines for the log, SARIF 2.1.0 for code scanning, Markdown for a job summary.

Every function takes the decision.json mapping and returns text or JSON-ready data; nothing
here decides. Untrusted text (paths, flag details, failure messages) is kept as data: the
caller escapes what reaches a terminal (``literal.one_line``); Markdown escapes it here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def text_lines(payload: dict) -> list[str]:
    """The gate's log lines, one per cause a reviewer acts on (untrusted text inside: the
    caller prints each through ``one_line``)."""
    lines = [f"gate · base {payload.get('base')} · merge base {str(payload.get('merge_base'))[:10]} · "
             f"head {str(payload.get('head'))[:10]}"]
    for r in payload.get("relations", []):
        row = f" row {r['row']}" if r.get("row") else ""
        keys = f"  keys: {', '.join(r['differing'][:8])}" if r.get("differing") else ""
        lines.append(f"relation {r['relation_id']}: {r['decision'].upper()} ({r['reason']}{row})"
                     f"{'  replayed' if r.get('replayed') else ''}{keys}")
    for f in payload.get("flags", []):
        state = "acknowledged" if f.get("acknowledged") else "REJECT"
        lines.append(f"flag {f['name']} {state}: {f['path']}{':' + str(f['line']) if f.get('line') else ''}  "
                     f"{f['detail']}")
    lines += [f"split REJECT: {o['commit'][:10]} {o['path']}: {o['why']}" for o in payload.get("split", [])]
    if payload.get("split_problem"):
        lines.append(f"split ABORT: {payload['split_problem']}")
    lines += [f"checklist FAIL {i['key']}: {i['evidence'][0] if i.get('evidence') else i['title']}"
              for i in payload.get("checklist", []) if i.get("state") == "fail"]
    lines += [f"gap (exit 2): {path} is owned by no catalog pattern" for path in payload.get("gaps", [])]
    lines += [f"lease {s['id']}: {s['state']}  {s['reason']}" for s in payload.get("leases", [])]
    lines += [f"bad input: {e['path']}{':' + str(e['line']) if e.get('line') else ''}: {e['message']}"
              for e in payload.get("errors", [])]
    lines += [f"{c['decision']} {c['reason']}: {c['detail']}" for c in payload.get("causes", [])
              if c["reason"] in ("incomplete_evidence", "replay_failed")]
    return lines


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) at ``path`` atomically: a temporary file beside it, then rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
