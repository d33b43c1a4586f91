"""The stream readers survive any line an agent writes (eval/stream_metrics.decode_line): nested 100,000 deep (orjson
crashed the process on a deep object; json raised RecursionError; a deep list parsed, then the skill-use reader's walk
raised it), a 20 MB line, bytes that are not UTF-8, lone surrogates: each is a bad line or an event, the cell is
graded, never an infra error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eval.stream_metrics import MAX_DEPTH, decode_line, read_stream
from mutator.server.mutator_view import turns
from tests.conftest import ROOT

DEEP = 100_000
SKILL = "skills/none/SKILL.md"


def tool_use(tool_input: str) -> bytes:
    return (b'{"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "name": "Bash", "id": "t1",'
            b' "input": ' + tool_input.encode() + b'}]}}')


LINES = {
    "a list 100,000 deep": b"[" * DEEP + b"]" * DEEP,
    "an object 100,000 deep": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "a tool input 100,000 deep": tool_use("[" * DEEP + "]" * DEEP),
    "a 20 MB line": json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * 20_000_000}]}}).encode(),
    "bytes that are not UTF-8": b'{"type": "assistant", "message": {"content": [{"type": "text", "text": "\xff\xfe\xed\xa0\x80"}]}}',
    "a lone surrogate in a tool call": tool_use('{"command": "cat \\udc00 ' + SKILL + '"}'),
    "a lone surrogate in a tool result": b'{"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id":'
                                         b' "t1", "content": "\\ud83d oops"}]}}',
}

# An agent that writes the line its argument names, then a good result. Run in a child process: on the old code a
# deep object crashed the process that read it.
AGENT = """import json, os, sys
with open(os.environ["SM_STREAM"], "ab") as f:
    f.write(open(sys.argv[1], "rb").read() + b"\\n")
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1}).encode() + b"\\n")
"""

EVALUATE = """import json, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from eval.cells import Contract
from eval.evaluate import EvalRequest, evaluate
from eval.jobs import CellSettings
from eval.suite import load_suite
from sandbox.none import NoneLauncher
from tests.conftest import make_suite
from tests.sandbox.conftest import PRICE
tmp = Path({tmp!r})
suite = make_suite(tmp / "suites", tasks=1)
contract = Contract(model="m", replicates=1, max_turns=5, agent="t", silence_ms=60_000, heartbeat_ms=60_000)
request = EvalRequest(skill_dir=None, skill_name="none", suite=load_suite(suite), contract=contract, key="k",
                      cells_root=tmp / "cells", price=PRICE, concurrency=1,
                      settings=CellSettings(agent_argv=[sys.executable, {agent!r}, {line!r}],
                                            launcher=NoneLauncher(), grader_timeout_s=60))
[cell] = evaluate(request)
print(json.dumps({{"status": cell.status, "error": cell.error, "skill_use": cell.skill_use}}))
"""


@pytest.mark.parametrize("what", list(LINES))
def test_a_cell_whose_stream_holds_any_line_is_graded(tmp_path: Path, what: str) -> None:
    line = tmp_path / "line.bin"
    line.write_bytes(LINES[what])
    (tmp_path / "agent.py").write_text(AGENT)
    script = EVALUATE.format(root=str(ROOT), tmp=str(tmp_path), agent=str(tmp_path / "agent.py"), line=str(line))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    cell = json.loads(done.stdout.splitlines()[-1])
    assert cell["status"] == "ok", cell


@pytest.mark.parametrize("what", ["a list 100,000 deep", "an object 100,000 deep", "a tool input 100,000 deep"])
def test_a_line_nested_too_deep_is_a_bad_line(tmp_path: Path, what: str) -> None:
    stream = tmp_path / "stream.jsonl"
    stream.write_bytes(LINES[what] + b"\n" + json.dumps({"type": "result", "subtype": "success", "is_error": False,
                                                         "num_turns": 1}).encode() + b"\n")
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        decode_line(LINES[what].decode())
    metrics = read_stream(stream)
    assert (metrics.bad_lines, metrics.has_result, metrics.invalid) == (1, True, "")
    assert turns(stream.read_text()) == turns(stream.read_text().splitlines()[1])   # the dashboard skips it too


def test_text_is_kept_and_only_lone_surrogates_are_replaced() -> None:
    assert decode_line('{"a": "\\ud800 x \\ud83d\\ude00", "b": ["\\udc00"]}') == {"a": "\ufffd x \U0001F600",
                                                                                "b": ["\ufffd"]}
    assert decode_line(json.dumps(["[" * 5000])) == ["[" * 5000]            # brackets in a string do not nest
    assert decode_line("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
