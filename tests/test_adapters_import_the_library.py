"""Adapters that import the library under review at their top (issue 34), and the faults of
adapters and of the harness said by name.

A ``canon``, ``transform`` or ``inverse`` module that does ``from verlib import Version``
resolves once the tree's import roots are on the path, in a src/ and a root layout; the
oracle's own packages still come from the repository root only, and an installed module the
adapter imports is never the tree's. A ``merge``, which runs in the judge, is refused when
it imports the tree. An adapter that does not resolve is the oracle's fault, the library's
own import error the patch's miss, and a fault of the harness an environment abort: each
named with its exception, message and file:line, never "subject died: exit 70".
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from bench.gitrepo import write_files
from library_trees import MONOTONIC, VERSION_HELPERS, library_plan, relation_entry, version_library
from relconsole.engine.relations.outcome import SubjectFailed
from relconsole.engine.relations.pool import evaluate_once
from relconsole.engine.relations.runner import run_relation
from relconsole.engine.relations.servercalls import ServerCalls
from relconsole.engine.relations.subject import calls, script
from relconsole.engine.relations.subject.server import ForkServer

HELPERS = VERSION_HELPERS + """

def to_text(parts):
    return str(Version.from_parts(parts))


def leading_zero(text):
    version = Version.parse(text)
    return f"0{version.major}.{version.minor}.{version.patch}"
"""
INVERSE = relation_entry("ver.parts", "roundtrip", "verlib.version:parts_of", "versions",
                         "a version built from its parts prints as its text", inverse="oracle.helpers:to_text")
TRANSFORM = relation_entry("ver.normal", "invariance", "verlib.version:normal", "versions",
                           "a version's normal form does not depend on a leading zero",
                           transform="oracle.helpers:leading_zero")
NORMAL = """

def normal(text):
    return str(Version.parse(text))


def parts_of(text):
    version = Version.parse(text)
    return {"major": version.major, "minor": version.minor, "patch": version.patch}
"""
FALLS = ("return cls(parts[\"major\"], parts.get(\"minor\", 0), parts.get(\"patch\", 0))",
         "return cls(parts[\"major\"], parts.get(\"minor\", 0), -parts.get(\"patch\", 0))")


@pytest.mark.parametrize("layout", ["src", "root"])
@pytest.mark.parametrize("relation", [MONOTONIC, INVERSE, TRANSFORM], ids=["canon", "inverse", "transform"])
def test_an_adapter_that_imports_the_library_at_its_top_works(tmp_path, layout, relation):
    plan = library_plan(tmp_path / "tree", relation, {"oracle/helpers.py": HELPERS}, layout,
                        library=version_library(NORMAL))
    record = evaluate_once(plan, seed=1)
    assert record.held and not record.vacuous, record.describe()


@pytest.mark.parametrize("relation,bug", [(MONOTONIC, FALLS), (TRANSFORM, ("return str(Version.parse(text))", "return text"))],
                         ids=["canon", "transform"])
def test_a_bug_judged_through_such_an_adapter_still_misses(tmp_path, relation, bug):
    """The transform builds the follow-up's input once it has resolved: the input is the
    version with a leading zero, which a normal form that keeps its text does not undo."""
    source = version_library(NORMAL)
    source["verlib/version.py"] = source["verlib/version.py"].replace(*bug)
    record = evaluate_once(library_plan(tmp_path / "tree", relation, {"oracle/helpers.py": HELPERS},
                                        library=source), seed=1)
    assert not record.held and not record.error_type, record.describe()


def test_an_oracle_package_of_the_tree_does_not_stand_in_for_the_protected_one(tmp_path):
    """The patch adds ``src/oracle/`` (a regular package, which would win over the root's
    ``oracle/`` folder on a plain path) whose adapter says every version is the same."""
    lenient = {"src/oracle/__init__.py": "", "src/oracle/helpers.py": "def version_data(value):\n    return (0,)\n"}
    plan = library_plan(tmp_path / "tree", MONOTONIC, {"oracle/helpers.py": HELPERS, **lenient},
                        library=version_library(replace=FALLS))
    record = evaluate_once(plan, seed=1)
    assert not record.held and not record.error_type, record.describe()


def test_an_oracle_package_of_the_tree_does_not_stand_in_for_the_protected_inverse(tmp_path):
    """The inverse is the oracle's adapter: the patch's ``src/oracle/helpers.py`` prints the
    text a lossy ``parts_of`` kept aside, so inverse(f(x)) would be x. It is never imported."""
    lossy = version_library(NORMAL.replace('"patch": version.patch}', '"patch": 0, "text": text}'))
    lenient = {"src/oracle/__init__.py": "", "src/oracle/helpers.py": "def to_text(parts):\n    return parts['text']\n"}
    plan = library_plan(tmp_path / "tree", INVERSE, {"oracle/helpers.py": HELPERS, **lenient}, library=lossy)
    record = evaluate_once(plan, seed=1)
    assert not record.held and not record.error_type, record.describe()


def test_an_installed_module_the_adapter_imports_is_never_the_tree_s(tmp_path):
    """PyYAML is installed (relconsole needs it); the patch adds its own ``yaml`` package,
    which breaks on import. The adapter imports yaml after the library: it gets the installed one."""
    helpers = HELPERS.replace("from verlib import Version\n", "from verlib import Version\nimport yaml\n")
    plan = library_plan(tmp_path / "tree", MONOTONIC, {"oracle/helpers.py": helpers,
                                                        "src/yaml/__init__.py": "raise ImportError('the tree s yaml')\n"})
    record = evaluate_once(plan, seed=1)
    assert record.held, record.describe()


def _line_of(text: str, needle: str) -> int:
    return text.splitlines().index(needle) + 1


@pytest.mark.parametrize("helpers,needle,says", [
    (HELPERS + "raise RuntimeError('helpers cannot start')\n", "raise RuntimeError('helpers cannot start')",
     ("RuntimeError", "helpers cannot start")),
    ("import nowhere_to_be_found\n" + HELPERS, "import nowhere_to_be_found",
     ("ModuleNotFoundError", "nowhere_to_be_found")),
], ids=["raises-after-the-library", "imports-nothing-installed"])
def test_an_adapter_that_does_not_resolve_is_the_oracle_s_fault_by_name(tmp_path, helpers, needle, says):
    plan = library_plan(tmp_path / "tree", MONOTONIC, {"oracle/helpers.py": helpers})
    result = run_relation(plan, None)
    assert (result.verdict.decision, result.verdict.reason, result.verdict.exit_code) == ("abort", "oracle_fault", 3)
    assert result.first.error_type == "oracle_fault"
    detail = result.verdict.detail
    assert "oracle.helpers:version_data" in detail and all(word in detail for word in says), detail
    assert f"helpers.py:{_line_of(helpers, needle)}" in detail, detail
    assert "exit 70" not in detail


def test_an_adapter_without_the_attribute_it_names_is_the_oracle_s_fault(tmp_path):
    helpers = HELPERS.replace("def version_data(", "def version_tuple(")
    result = run_relation(library_plan(tmp_path / "tree", MONOTONIC, {"oracle/helpers.py": helpers}), None)
    assert (result.verdict.decision, result.verdict.reason) == ("abort", "oracle_fault"), result.verdict
    assert "AttributeError" in result.verdict.detail and "version_data" in result.verdict.detail


def test_the_library_failing_to_import_under_an_adapter_is_the_patch_s_miss(tmp_path):
    broken = version_library("\nraise ZeroDivisionError('the patch broke the import')\n")
    result = run_relation(library_plan(tmp_path / "tree", MONOTONIC, {"oracle/helpers.py": HELPERS}, library=broken),
                          None)
    assert (result.verdict.decision, result.first.error_type) == ("reject", "ZeroDivisionError"), result.verdict
    assert result.first.error_files[-1] == "src/verlib/version.py"


SPLIT = relation_entry("ver.newest", "split_merge", "verlib.version:newest", "lists",
                       "the newest of the parts is the newest of the whole", merge="oracle.merging:merge")
NEWEST = "\n\ndef newest(texts):\n    return [max(texts, key=Version.parse)] if texts else []\n"


@pytest.mark.parametrize("merging", [
    "from verlib import Version\n\n\ndef merge(a, b):\n    return [max(a + b, key=Version.parse)]\n",
    "def merge(a, b):\n    from verlib import Version\n    return [max(a + b, key=Version.parse)]\n",
], ids=["at-its-top", "when-called"])
def test_a_merge_that_imports_the_tree_is_refused_as_the_oracle_s_fault(tmp_path, merging):
    """A merge runs in the judge, which never runs the tree's code, not even a copy of the
    library its own interpreter might have installed."""
    files = {"oracle/merging.py": merging, "oracle/seeds/lists.jsonl": '["1.0.0", "2.3.4", "10.0.1", "0.9.9"]\n'}
    plan = library_plan(tmp_path / "tree", SPLIT, files, library=version_library(NEWEST))
    result = run_relation(plan, None)
    assert (result.verdict.decision, result.verdict.reason) == ("abort", "oracle_fault"), result.verdict
    detail = result.verdict.detail
    assert "oracle.merging:merge" in detail and "imports verlib" in detail, detail


def test_a_fault_of_the_harness_is_an_environment_abort_naming_its_step_and_line(tmp_path):
    """A call the harness cannot set up (its oracle package names are not a list) raises in
    the child's own code: the judge hears the step, the exception and the harness part's
    file:line, not an exit status."""
    tree = tmp_path / "tree"
    library_plan(tree, MONOTONIC, {"oracle/helpers.py": HELPERS})
    server = ForkServer(tree, [str(tree), str(tree / "src")], None, None)
    relation = {"id": "x", "kind": "bound", "subject": "verlib:Version.parse", "compare": "exact"}
    made = ServerCalls(server, relation, random.Random(1), time.monotonic() + 60,
                       {"order": [], "imported": set(), "subject_seed": 1}, oracle_roots=[])
    try:
        with pytest.raises(SubjectFailed) as failed:
            made.raw({"ops": [["value", '"1.0.0"']], "oracle_roots": 7})
    finally:
        server.close()
    error = failed.value.error
    assert error["type"] == "environment" and "TypeError" in error["message"], error
    assert "setting up the call" in error["message"] and "exit 70" not in error["message"]
    source = Path(calls.__file__).read_text()
    raising = next(line for line in source.splitlines() if "set(names)" in line)
    assert error["where"] == f"calls.py:{_line_of(source, raising)}", error


def test_every_line_of_the_harness_script_is_named_by_its_part_s_file_and_line():
    source = script.harness_source().splitlines()
    for part in script.PARTS:
        own = Path(part.__file__).read_text().splitlines()
        name = Path(part.__file__).name
        for number, text in enumerate(own, 1):
            if text.startswith(("def ", "class ")):
                lines = [n for n, line in enumerate(source, 1) if line == text]
                assert f"{name}:{number}" in [script.part_line(f"<string>:{n}") for n in lines], (name, text)


def test_a_copy_of_the_library_installed_where_the_judge_runs_never_stands_in_for_the_tree(tmp_path):
    """New-user trial: with the library also pip-installed beside relconsole, an adapter's
    ``from verlib import Version`` bound the installed release, so a bug planted in the tree
    passed. The library's top-level names (``RunPlan.library``, the merge base's) come from
    the tree's import roots only."""
    import dataclasses
    import site
    import uuid
    import shutil
    name = f"verlib{uuid.uuid4().hex[:10]}"  # installed into this venv for the test: no other test imports it
    installed = Path(site.getsitepackages()[0])
    good = {path.replace("verlib", name, 1): text.replace("verlib", name)
            for path, text in version_library(NORMAL).items()}
    broken = dict(good)
    broken[f"{name}/version.py"] = broken[f"{name}/version.py"].replace(*FALLS)
    adapter = VERSION_HELPERS.replace("verlib", name) + "\n\ndef build(parts):\n    return Version.from_parts(parts)\n"
    relation = relation_entry("ver.monotonic", "monotonic", "oracle.helpers:build", "parts",
                              "a higher patch is a higher version", canon="oracle.helpers:version_data",
                              params="{field: patch, step: 1}")
    plan = library_plan(tmp_path / "tree", relation, {"oracle/helpers.py": adapter}, library=broken)
    write_files(installed, good)
    try:
        record = evaluate_once(dataclasses.replace(plan, library=(name,)), seed=1)
    finally:
        shutil.rmtree(installed / name)
    assert not record.held and not record.error_type, record.describe()  # the tree's bug, judged


def test_the_library_s_names_are_the_merge_base_s_packages_and_modules(tmp_path):
    from bench.gitrepo import committed_repo
    from relconsole.engine.gate.runplans import library_names
    repo = committed_repo(tmp_path / "repo", {
        "src/pkg/__init__.py": "", "src/pkg/inner/__init__.py": "", "src/tool.py": "", "src/json.py": "",
        "src/notes/readme.txt": "", "top.py": "", "docs/conf.py": "", "setup.py": "", "src/not-a-name.py": ""})
    sha = (repo / ".git" / "refs" / "heads" / "main").read_text().strip()
    assert library_names(str(repo), sha, ("", "src")) == ("pkg", "setup", "tool", "top")
