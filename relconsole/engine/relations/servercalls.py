"""The relations' ``Calls`` over the subject's fork servers: one call per fresh child, in a drawn order (SPEC §7).

``ServerCalls`` adds a run's common fields to each call, draws the order the independent calls
run in, moves one call to a second server under another hash seed, and makes one call a
repeated one (``other_seed``: the seed it runs on first); ``_encoding_of`` encodes an
expected output on a thread while the call runs. A child's ``fault`` (an adapter that did
not resolve, a step of the harness that raised) becomes the oracle's fault, the library's
miss or an environment fault (``ServerCalls._fault``), never a bare exit status.
"""

from __future__ import annotations

import random

from relconsole.engine.relations.subject.wire import Unencodable, encode


# error types relconsole itself gives (an environment or oracle fault, the time running out): a
# subject's exception class of one of these names is renamed, so it is its miss and nothing else
JUDGES_WORDS = frozenset({"environment", "oracle_fault", "timeout"})


class ServerCalls:
    """The relations' ``Calls`` over one fork server: each call a fresh child, in an order
    drawn from ``rng``, the run's common fields (subject, seed, adapters and the top-level
    names they may be imported from, ``oracle_roots``, and the library under review's,
    ``library``) added."""

    def __init__(self, server, relation: dict, rng: random.Random, deadline: float, log: dict,
                 seed_row: int | None = None, prefix: list | None = None, oracle_roots: list[str] = (),
                 second=None, decoy: str | None = None, input_index: int = 0, library: list[str] = (),
                 record_lines: "bool | list" = True):
        self.server, self.relation, self.rng, self.deadline = server, relation, rng, deadline
        self.second, self.decoy, self.input_index = second, decoy, input_index
        self.log, self.seed_row, self.prefix = log, seed_row, prefix or []
        self.oracle_roots = list(oracle_roots)
        self.library = list(library)  # the library under review's top-level names (RunPlan.library)
        self.record_lines = record_lines  # the child records the tree's executed lines (RunPlan.record_lines)

    def _spec(self, call: dict) -> dict:
        rel = self.relation
        # each call its own random seed (drawn from the run's): calls agreeing only because
        # they drew the same "random" numbers would hide a subject that is not deterministic
        seed = call["seed"] if "seed" in call else self.log["subject_seed"] ^ self.rng.getrandbits(32)
        spec = {"subject": rel["subject"], "seed": seed,
                "adapters": [rel[r] for r in ("transform", "canon") if rel.get(r)], "canon": rel.get("canon"),
                "oracle_roots": self.oracle_roots, "library": self.library, "lines": self.record_lines}
        spec.update(call)
        spec["ops"] = self.prefix + list(call.get("ops", []))
        if self.seed_row is not None:
            spec["seed_row"] = self.seed_row
        return spec

    def raw(self, call: dict, key: str = "call", expect=None, server=None) -> dict:
        """The child's result mapping for ``call``; ``expect`` (a callable giving the wire
        bytes the output should be) lets a result written exactly so skip decoding."""
        import time

        from relconsole.engine.relations.outcome import Kept, SubjectFailed
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SubjectFailed({"type": "timeout", "message": "the relation's time ran out", "where": ""},
                                by_judge=True)
        result = (server or self.server).call(self._spec(call), left, expect)
        self.log["order"].append(key)
        if result.status != "ok":
            kind = {"timeout": "timeout", "died": "subject died", "over_cap": "output over the cap",
                    "garbage": "undecodable output"}[result.status]
            raise SubjectFailed({"type": kind, "message": result.detail, "where": ""})
        body = {"kept": Kept(**result.kept), **result.body} if result.kept is not None else result.body
        self.log["imported"].update(str(p) for p in body.get("imported") or [] if isinstance(p, str))
        add_executed(self.log.setdefault("executed", {}), body.get("executed"))
        if "fault" in body:
            raise self._fault(body["fault"])
        if "unencodable" in body:
            name = str(body["unencodable"])[:200]
            if call.get("keep"):  # an output only handed on, never compared: no canon is asked of it
                why = str(body.get("unpicklable") or "")[:400]
                raise SubjectFailed({"type": "not carried", "message": f"{key} is {name}", "where": ""}, blocked=(
                    f"{key} is {name}, which neither the wire nor pickle carries to the process of the call "
                    f"that reads it ({why})"))
            raise SubjectFailed({"type": "not comparable", "message": f"declare how to compare {name}",
                                 "where": ""}, blocked=f"declare how to compare {name} (a canon: adapter "
                                                       "in the catalog maps it to data)")
        if "raised" in body and not isinstance(body["raised"], dict):
            raise SubjectFailed({"type": "undecodable output", "message": "an exception that is not one", "where": ""})
        if "history" in body:
            raise SubjectFailed({"type": "state across calls", "message": str(body["history"])[:500], "where": ""})
        return body

    def _fault(self, fault) -> Exception:
        """SubjectFailed for a child's ``fault``. An adapter's (``by: adapter``) is the
        oracle's (``oracle_fault``), unless its innermost frame is a tree file outside the
        oracle's packages: the library under review raised while the adapter imported it,
        the subject's failure like any other. The harness's own (``by: harness``) is the
        machine's or relconsole's (``environment``). Each names the adapter or step, the
        exception's type and message, and where (a line of the harness's script as its part's
        file and line)."""
        from relconsole.engine.relations.outcome import SubjectFailed
        from relconsole.engine.relations.subject.script import part_line
        fault = fault if isinstance(fault, dict) else {}
        kind, message = str(fault.get("type") or "?")[:200], str(fault.get("message") or "")[:1000]
        where, step = part_line(str(fault.get("where") or "")), str(fault.get("step") or "?")[:100]
        files = [f for f in fault.get("files") or [] if isinstance(f, str)]
        if fault.get("by") != "adapter":
            return SubjectFailed({"type": "environment", "where": where, "files": [], "message": (
                f"the subject's harness raised {kind} while {step}: {message}; a fault of the harness or of "
                "this machine, not of the patch")}, by_judge=True)
        ref = str(fault.get("ref"))[:300]
        role = next((r for r in ("canon", "transform") if self.relation.get(r) == ref), "adapter")
        if files and files[-1].split("/", 1)[0].removesuffix(".py") not in self.oracle_roots:
            return SubjectFailed({"type": kind, "where": where, "files": files, "classes": fault.get("classes"),
                                  "module": fault.get("module"),
                                  "message": f"{message} (raised by the tree's code the {role} adapter {ref} imports)"})
        return SubjectFailed({"type": "oracle_fault", "where": where, "files": files, "message": (
            f"the {role} adapter {ref} raised {kind} while {step}: {message}")}, by_judge=True)

    def _elsewhere(self, calls: dict[str, dict], keys: list[str], repeated: str | None) -> str | None:
        """The one call of a run (drawn, in the first batch of two calls or more) that runs in
        the second server, under another PYTHONHASHSEED: an output that follows the process's
        string hashing (a sum over a set of text) agrees within one server and nowhere else.
        Never a call that keeps an output for the next or reads one kept (both need one server)."""
        if self.second is None or self.log.get("elsewhere") is not None or len(keys) < 2:
            return None
        movable = [k for k in keys if k != repeated and not calls[k].get("keep")
                   and not any(op[:1] == ["kept"] for op in calls[k].get("ops", []))]
        if not movable:
            return None
        chosen = random.Random(f"second {self.log['subject_seed']}").choice(sorted(movable))
        self.log["elsewhere"] = chosen
        return chosen

    def _same_elsewhere(self, spec: dict, first) -> None:
        """The repeated call's first answer (on ``quarter`` of its input, see ``harness.build_input``)
        against a first call on that input in the second server, under another PYTHONHASHSEED
        and the same clock and random seed, compared under the relation's own compare, a list's
        order included unless the relation says ``order_free``: an output
        that follows the process's string hashing (a list made from a set of text, a ``hash()``
        in it) differs, though every relation compares its lists as bags. Raises SubjectFailed
        for a difference. Nothing to check without a second server, without a first answer, or
        for a call on an output only its own server keeps."""
        from relconsole.engine.relations.canon import NotComparable
        from relconsole.engine.relations.outcome import Check, SubjectFailed
        if self.second is None or not isinstance(first, list) or len(first) != 2 or spec.get("keep") \
                or any(op[:1] == ["kept"] for op in spec.get("ops", [])):
            return
        call = {k: v for k, v in spec.items() if k not in ("repeat", "decoy")}
        call["ops"] = list(spec.get("ops", [])) + [["quarter"]]
        other = self.raw(call, "same input, other hash seed", server=self.second)
        mine = ("raised", first[1]) if first[0] == "raised" else ("ok", first[1])
        theirs = ("raised", (other.get("raised") or {}).get("type")) if "raised" in other else ("ok", other.get("ok"))
        try:
            same = mine[0] == theirs[0] and (Check(self.relation).outcome(mine[1], theirs[1]).held
                                             if mine[0] == "ok" else mine[1] == theirs[1])
        except (NotComparable, TypeError, ValueError, RecursionError):
            same = False
        if not same:
            raise SubjectFailed({"type": "depends on the process", "where": "", "message": (
                "the same input gave another answer in a process with another string-hash seed "
                "(PYTHONHASHSEED): the output follows the process's hashing (a list made from a set "
                "of text, a hash() in it), so it changes from run to run in production")})

    def run(self, calls: dict[str, dict]) -> dict:
        """``{key: output}``; a call with an ``expect`` value (the judge's, never sent) gives
        ``relations.WRITTEN_ALIKE`` when its output is that value written to the byte; one
        made with ``keep`` gives a ``relations.Kept`` when the server kept its output."""
        from relconsole.engine.relations.outcome import WRITTEN_ALIKE, Kept, SubjectFailed
        keys = list(calls)
        self.rng.shuffle(keys)
        # one call of each input of a run (a corpus, or every seed: a seed that cannot show state,
        # percent 0, must not be the only one), drawn, runs as its process's third call (drawn
        # from a stream of its own: the order stream's draws, one per call, stay as they were)
        done = self.log.setdefault("repeated", set())
        repeated = None if self.input_index in done or not keys or not self.log.get("repeat") \
            else random.Random(f"repeat {self.log['subject_seed']} {self.input_index}").choice(keys)
        done.add(self.input_index)
        elsewhere = self._elsewhere(calls, keys, repeated)
        out = {}
        for key in keys:
            spec = dict(calls[key], repeat=2) if key == repeated else dict(calls[key])
            if key == repeated and self.decoy is not None:
                spec["decoy"] = self.decoy
            expect = _encoding_of(spec.pop("expect")) if "expect" in spec else None
            if key == repeated:  # drawn here, where raw() would draw it: the other server's call shares it
                spec["seed"] = self.log["subject_seed"] ^ self.rng.getrandbits(32)
            body = self.raw(spec, key, expect, self.second if key == elsewhere else None)
            if key == repeated:
                self._same_elsewhere(spec, body.get("first"))
            if "raised" in body:
                raised = body["raised"]
                error = {k: raised.get(k) for k in ("type", "message", "where", "files", "classes", "module")}
                if error.get("type") in JUDGES_WORDS:  # a class of the subject's named like a verdict of ours
                    error["type"] = f"{error['type']} (an exception class of the subject's)"
                raise SubjectFailed(error)
            kept = body.get("kept")
            out[key] = kept if isinstance(kept, Kept) else WRITTEN_ALIKE if body.get("same") else body["ok"]
        return out


def other_seed(seeds: list, index: int, seed: int) -> str | None:
    """Wire text of a seed other than ``seeds[index]``, drawn from the run seed, for the
    repeated call to make first: a memo whose key leaves out part of a seed (a salt, a size)
    answers the judged seed with that one's answer. None with a single seed or none that can
    be encoded."""
    others = [i for i in range(len(seeds)) if i != index]
    if not others:
        return None
    try:
        return encode(seeds[random.Random(f"decoy {seed} {index}").choice(others)]).decode("utf-8")
    except (ValueError, TypeError, OverflowError, RecursionError, Unencodable):
        return None


def _encoding_of(value):
    """A callable giving ``value``'s wire bytes (or None when it has none), encoded on a
    thread while the call runs: the judge only waits on the child meanwhile."""
    import threading
    box: list = []

    def work() -> None:
        try:
            box.append(encode(value))
        except (ValueError, TypeError, OverflowError, RecursionError, Unencodable):
            box.append(None)
    thread = threading.Thread(target=work, daemon=True)
    thread.start()

    def result():
        thread.join()
        return box[0] if box else None
    return result


def add_executed(into: dict, sent) -> None:
    """Add a child's ``executed`` rows (``[[tree path, [line, ...]], ...]``) to ``into`` (tree path
    -> set of lines); a row that is not one is left out (the subject wrote the bytes)."""
    if not isinstance(sent, list):
        return
    for row in sent:
        if isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and isinstance(row[1], list):
            into.setdefault(row[0], set()).update(n for n in row[1] if type(n) is int and n > 0)

