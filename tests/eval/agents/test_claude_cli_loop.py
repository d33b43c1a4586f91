"""`run.py --real --agent claude-cli --sandbox none`: the real Claude Code CLI as build agent and mutator, with
no sandbox (the `auto` fallback on macOS and in containers), keeps a change. Its own config dir must not land
in the mutator's workspace, where the tamper check would fail every mutation."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from mutator.store.db import connect_readonly
from tests.eval.agents.messages_server import message, text, tool_history, tool_use, usage
from tests.eval.agents.test_real_run import clean_env, demo_subset, run_py

ROOT = Path(__file__).resolve().parents[3]

APPLY = """import csv, glob, json, sys
sys.path.insert(0, {root!r})
from fakes.csv_rules import CANONICAL_ORDER, apply_rules, to_csv_text
rules = json.load(open(glob.glob('.claude/skills/*/rules.json')[0]))
ops = [r['op'] for r in (rules.get('rules', rules) if isinstance(rules, dict) else rules)]
rows = list(csv.reader(open('input.csv', newline='')))
open('output.csv', 'w').write(to_csv_text(apply_rules(rows, [op for op in ops if op in CANONICAL_ORDER])))
print('APPLIED', ops)
"""


def first_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def cli_models(script: Path):
    """The CLI's model, build or mutator (told apart by the prompt): a build cell runs the skill's rules over
    input.csv with one Bash call; the mutator reads rules.json, adds the dates rule, answers with its JSON."""
    def model(body: dict) -> object:
        if not body.get("tools"):
            return message(text("ok"), use=usage(1, 1))   # the CLI's side calls
        done = tool_history(body)
        if "improving an agent skill" not in first_text(body):
            if not done:
                return message(tool_use("Bash", {"command": f"{sys.executable} {script}",
                                                 "description": "apply the rules"}), stop="tool_use",
                               use=usage(40, 10))
            return message(text("Wrote output.csv."), use=usage(60, 5))
        system = body.get("system") or ""
        system = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
        workspace = Path(re.search(r"Primary working directory: (\S+)", system).group(1))
        rules = workspace / "skill" / "rules.json"
        if not done:
            return message(tool_use("Read", {"file_path": str(rules)}), stop="tool_use", use=usage(100, 20))
        if len(done) == 1:
            new = [*json.loads(rules.read_text()), {"id": "dates", "op": "dates"}]
            return message(tool_use("Write", {"file_path": str(rules), "content": json.dumps(new, indent=1) + "\n"}),
                           stop="tool_use", use=usage(120, 40))
        return message(text('Done. {"summary": "Add the dates rule", "reasoning": "dates lose points"}'),
                       use=usage(140, 20))
    return model


@pytest.mark.skipif(shutil.which("claude") is None, reason="the claude CLI is not installed")
def test_claude_cli_without_a_sandbox_keeps_a_change(server, tmp_path: Path) -> None:
    script = tmp_path / "apply.py"
    script.write_text(APPLY.format(root=str(ROOT)))
    server.responder = cli_models(script)
    data = tmp_path / "data"
    train, val = demo_subset(tmp_path, "clean-train", 2), demo_subset(tmp_path, "clean-val", 3)
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test")
    done = run_py("--suite", str(train), "--val", str(val), "--real", "--agent", "claude-cli", "--sandbox", "none", "--no-solve",
                  "--skill-dir", str(ROOT / "suites" / "csv-clean"), "--rounds", "1", "--replicates", "1",
                  "--data-dir", str(data), env=env)
    db = connect_readonly(data / "mutator.db")
    attempt = dict(next(iter(db.query("select * from attempts where round = 1"))))
    cells = [dict(r) for r in db.query("select status, error from cells")]
    db.conn.close()
    assert "wrote outside its skill" not in (attempt["error"] or ""), attempt["error"]
    assert done.returncode == 0, done.stderr[-4000:]
    assert all(c["status"] == "ok" for c in cells), cells
    assert attempt["summary"] == "Add the dates rule" and attempt["verdict"] == "KEEP", attempt
    assert not list(data.rglob(".claude-config"))   # the CLI's config lives outside every workspace and cell
