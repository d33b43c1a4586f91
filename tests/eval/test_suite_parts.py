"""A suite's agent hash moves with what the agent sees and never with grading; changes are named by file and task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.suite import load_suite
from eval.suite_parts import changes, manifest, needs_site
from tests.conftest import make_suite


def edit_task(suite: Path, index: int, **fields) -> None:
    lines = (suite / "tasks.jsonl").read_text().splitlines()
    lines[index] = json.dumps({**json.loads(lines[index]), **fields})
    (suite / "tasks.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("edit", "agent_side", "named"), [
    (lambda s: (s / "run-eval.py").write_text((s / "run-eval.py").read_text() + "# fixed\n"), False, ["run-eval.py"]),
    (lambda s: (s / "answers").mkdir() or (s / "answers" / "t0.txt").write_text("key"), False, ["answers/t0.txt"]),
    (lambda s: edit_task(s, 0, required=["output.txt", "more.txt"]), False,
     ["tasks.jsonl (the grading fields of task t0)"]),
    (lambda s: edit_task(s, 1, expectations=["says done"]), False, ["tasks.jsonl (the grading fields of task t1)"]),
    (lambda s: (s / "fixtures" / "t0" / "key.txt").write_text("grader only"), False, ["fixtures/t0/key.txt"]),
    (lambda s: edit_task(s, 1, prompt="Write done, please"), True, ["tasks.jsonl (what the agent sees of task t1)"]),
    (lambda s: (s / "fixtures" / "t0" / "in.txt").write_text("other input\n"), True, ["fixtures/t0/in.txt"]),
    (lambda s: edit_task(s, 0, trigger=False), True, ["tasks.jsonl (what the agent sees of task t0)"]),
], ids=["grader", "answers", "required", "expectations", "unlisted-fixture", "prompt", "input-bytes",
        "unknown-field"])
def test_the_agent_hash_moves_only_with_what_the_agent_sees(tmp_path: Path, edit, agent_side: bool,
                                                            named: list[str]) -> None:
    suite = make_suite(tmp_path)
    before, was = load_suite(suite), manifest(suite, "tiny", {})
    edit(suite)
    after = load_suite(suite)
    assert after.content_hash != before.content_hash                     # every change re-grades
    assert (after.agent_hash != before.agent_hash) is agent_side
    assert changes(was, manifest(suite, "tiny", {})) == named


@pytest.mark.parametrize("source, needs", [
    ("from __future__ import annotations\nimport csv, json, re\nfrom pathlib import Path\nimport os.path\n", False),
    ("import sys\nsys.exit(2)\n", False),                       # sys.exit is the standard library's
    ("import numpy\n", True),                                   # an installed package
    ("from yaml import safe_load\n", True),
    ("import helpers\n", True),                                 # a module beside it: not known to be stdlib-only
    ("from . import helpers\n", True),                          # a relative import
    ("exit(2)\n", True), ("quit()\n", True), ("help(print)\n", True),   # builtins only site adds
    ("import importlib\n", True), ("m = __import__('json')\n", True), ("exec('import numpy')\n", True),
    ("import runpy\n", True), ("import distutils\n", True),     # distutils: setuptools' .pth replaces it
    ("def broken(:\n", True),                                   # what it does cannot be read: as before
])
def test_a_script_needs_site_unless_it_uses_only_the_standard_library(source: str, needs: bool) -> None:
    assert needs_site(source) is needs
