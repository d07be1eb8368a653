"""Relations' seeds files (SPEC §3): where one may sit, whether its rows fit the relation's
input schema, and the check a review load makes of every relation's seeds file (a bad one
fails closed: the relation is blocked, exit 5)."""

from __future__ import annotations

import json

from relconsole.engine.repo.treeview import TreeView

from relconsole.engine.oracle import jsonnumbers
from relconsole.engine.oracle.catalog import Relation, check_row
from relconsole.engine.errors import BadInputError
from relconsole.engine.repo.owners import protected
from relconsole.engine.oracle.textedit import jsonl_lines


def check_seeds(review, view: TreeView) -> None:
    """§3: a seeds file with bad rows fails closed (the relation is blocked, exit 5)."""
    texts: dict[str, str | None] = {}
    problems: dict[tuple[str, str], BadInputError | None] = {}  # (path, schema) -> the file's first problem
    placed: dict[str, str | None] = {}  # path -> seeds_path_problem, asked once per file
    for relation in review.relations:
        path = relation.seeds_path
        if not path:
            continue
        if path not in placed:
            placed[path] = seeds_path_problem(review.layout, path)
        misplaced = placed[path]
        if misplaced:
            review.seed_problems[relation.id] = misplaced
            review.errors.append(BadInputError(review.layout.catalog, f"relation {relation.id!r}: {misplaced}",
                                               relation.line))
            continue
        if path not in texts:  # thousands of relations share a few seeds files
            texts[path] = view.read_text(path)
        text = texts[path]
        if text is None:
            review.seed_problems[relation.id] = f"seeds file {path} is absent"
            review.errors.append(BadInputError(path, f"seeds file of {relation.id} is absent"))
            continue
        key = (path, json.dumps(relation.input.get("schema"), sort_keys=True, default=str))
        if key not in problems:
            problems[key] = seed_file_problem(text, path, relation)
        problem = problems[key]
        if problem:
            review.seed_problems[relation.id] = problem.one_line()
            review.errors.append(problem)


def seeds_path_problem(layout, path: str) -> str | None:
    """Why ``path`` cannot name a seeds file (§3), or None: a plain repository-relative POSIX
    path (no leading ``/``, ``..``, ``.``, empty part, backslash or trailing ``/``) to a
    ``.jsonl`` file inside the protected tree and outside quarantine. A seeds file elsewhere
    would come from the patch's tree (the oracle overlays only the protected tree), and an
    absolute path would read the host's file."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        return f"seeds path {path!r} is not a plain path inside the repository"
    if not path.endswith(".jsonl"):
        return f"seeds path {path!r} is not a .jsonl file"
    if not protected(layout.protected, path) or path.startswith(layout.quarantine_dir.rstrip("/") + "/"):
        return (f"seeds path {path!r} is outside the protected tree ({', '.join(layout.protected)}; not quarantine): "
                "the patch would choose the relation's inputs")
    return None


def seed_file_problem(text: str, path: str, relation: Relation) -> BadInputError | None:
    """The first problem of a relation's seeds file against its input schema (§3), naming
    the file and line, or None when every row is valid."""
    count = 0
    for number, line in enumerate(jsonl_lines(text), 1):
        if not line.strip():
            continue
        count += 1
        try:
            value = jsonnumbers.loads(line)
        except json.JSONDecodeError as exc:
            return BadInputError(path, jsonnumbers.json_line_problem(exc), number)
        reasons = check_row(value, relation.input.get("schema"))
        if reasons:
            return BadInputError(path, reasons[0], number)
    if count == 0:
        return BadInputError(path, "a seeds file is never empty", 1)
    return None


def seed_values(view: TreeView, path: str) -> list:
    """The JSON values of the seed file ``path`` at ``view``, one per line that parses."""
    values = []
    for line in jsonl_lines(view.read_text(path) or ""):
        try:
            values.append(jsonnumbers.loads(line))
        except json.JSONDecodeError:
            continue
    return values
