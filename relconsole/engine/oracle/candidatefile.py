"""A candidate as a file (SPEC §10): its size, its syntax, one document, no aliases.

The first four rules of ``candidates.RULES``, judged on the text alone before anything
reads its content; ``file_rules`` gives their verdicts and the loaded mapping.
"""

from __future__ import annotations

from typing import Any, Callable

import yaml

from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.candidates import Verdict
from relconsole.engine.oracle.yamlload import line_counter, load_yaml_text

# A candidate is one relation of about fifteen short fields (the sample's are under 500 bytes).
# 64 KiB is a hundred times that and still a screenful a reviewer can read to the end; a
# larger draft is a pasted corpus, a table of answers, or padding that hides a key from the
# reviewer. The 1 MiB cap of yamlload.MAX_FILE_BYTES stays the limit for every other file.
CANDIDATE_MAX_BYTES = 64 * 1024
_MAX_DEPTH = 32  # nesting a candidate may use; its deepest real path is input.schema.<f>.choices.<i>
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def file_rules(path: str, text: str) -> tuple[list[Verdict], Any]:
    """The file-level verdicts (``size_limit`` .. ``no_aliases``) and the loaded mapping.

    The loaded value is None unless every file-level rule holds. The parser's events are
    read first (cheap, no alias is ever expanded), so each failure gets its own rule.
    """
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > CANDIDATE_MAX_BYTES:
        return [Verdict("size_limit", False, f"{path}: {size} bytes; a candidate may have at most "
                                             f"{CANDIDATE_MAX_BYTES} (one relation is a few hundred)")], None
    out = [Verdict("size_limit", True, f"{size} bytes")]
    line_of = line_counter(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # bytes decoded with surrogateescape: not UTF-8 text
        line = text.count("\n", 0, exc.start) + 1
        return out + [Verdict("parses", False, f"{path}:{line}: not UTF-8 text")], None
    events, unparsed = _events(path, text, line_of)
    if unparsed is not None:
        return out + [unparsed], None
    docs = [e for e in events if isinstance(e, yaml.DocumentStartEvent)]
    single = Verdict("single_document", True)
    if len(docs) > 1:
        single = Verdict("single_document", False,
                         f"{path}:{line_of(docs[1].start_mark)}: {len(docs)} YAML documents in one file; "
                         "a candidate is one document (no '---' between relations)")
    aliases = [e for e in events if isinstance(e, yaml.AliasEvent)]
    no_alias = Verdict("no_aliases", True)
    if aliases:
        no_alias = Verdict("no_aliases", False,
                           f"{path}:{line_of(aliases[0].start_mark)}: YAML alias *{aliases[0].anchor} "
                           f"({len(aliases)} in all): a candidate spells every value out, so the text "
                           "a reviewer reads is the whole relation")
    if not (single.ok and no_alias.ok):
        return out + [Verdict("parses", True), single, no_alias], None
    try:
        raw = load_yaml_text(text, path).data
    except BadInputError as exc:  # duplicate keys, merge keys, unknown tags, impossible dates
        return out + [Verdict("parses", False, exc.one_line()), single, no_alias], None
    return out + [Verdict("parses", True), single, no_alias], raw


def _events(path: str, text: str, line_of: Callable[[Any], int]) -> tuple[list, Verdict | None]:
    """The parser's events of ``text`` (no alias is ever expanded) and None, or [] and the
    failed ``parses`` verdict: invalid YAML (file and line), a character YAML does not
    allow, or nesting deeper than ``_MAX_DEPTH``. ``line_of(mark)``: a mark's 1-based line."""
    depth, deepest = 0, None
    try:
        events = []
        for event in yaml.parse(text, Loader=_PARSER):
            events.append(event)
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > _MAX_DEPTH:
                    deepest = event
                    break
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{line_of(mark)}" if mark else path
        problem = " ".join(str(exc.problem or exc.context or "not YAML").split())
        return [], Verdict("parses", False, f"{where}: invalid YAML: {problem}")
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, other C0 controls)
        line = text.count("\n", 0, exc.position) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "\0")
        return [], Verdict("parses", False, f"{path}:{line}: invalid YAML: character U+{code:04X} "
                                            "is not allowed")
    except yaml.YAMLError as exc:
        return [], Verdict("parses", False, f"{path}: invalid YAML: {' '.join(str(exc).split())}")
    if deepest is not None:
        return [], Verdict("parses", False, f"{path}:{line_of(deepest.start_mark)}: nested more than "
                                            f"{_MAX_DEPTH} levels deep")
    return events, None
