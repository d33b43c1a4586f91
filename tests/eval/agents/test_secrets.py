"""Secrets never stored, never staged: agents, their tools and graders get an allow-listed environment,
and secret-looking values are [REDACTED] before anything is written to the store or handed to the mutator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eval.agents.tools import build_toolbox
from eval.environment import allowed_env
from eval.redact import REDACTED, redact
from mutator.store.db import connect_readonly
from tests.eval.agents.messages_server import demo_agent, message, text, tool_history, tool_use, usage
from tests.eval.agents.sandboxed import ENV_ONLY, EVERY_ENVIRON, launcher_or_skip, leaks, run_backend
from tests.eval.agents.test_real_run import ROOT, clean_env, demo_subset, run_py

PLANTED_KEY = "sk-ant-PLANTED-0123456789abcdef"
PLANTED_TOKEN = "planted-token-value-4242"       # a secret-looking name the user passes on with --pass-env
PLANTED_SHAPE = "sk-ant-SHAPEONLY-9876543210"    # under an innocent name: caught by its key shape

ENV_AGENT = """import json, os, subprocess, sys
stream = os.environ["SM_STREAM"]
env = dict(os.environ)
tool = subprocess.run(["env"], capture_output=True, text=True).stdout      # a tool call of the agent
with open(stream, "a") as f:
    f.write(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": json.dumps(env)}],
                        "usage": {"input_tokens": 1, "output_tokens": 1}}}) + "\\n")
    f.write(json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "content": tool}]}}) + "\\n")
open("env.txt", "w").write(tool)
print(tool, file=sys.stderr)
os.execv(sys.executable, [sys.executable, {fake!r}])
"""

ENV_GRADER = """import os, subprocess, sys
print("\\n".join(f"{k}={v}" for k, v in os.environ.items()), file=sys.stderr)   # kept as grade.stderr
real = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "grade_real.py"),
                       *sys.argv[1:]], capture_output=True, text=True)
sys.stdout.write(real.stdout)
sys.exit(real.returncode)
"""


def env_printing_suite(tmp_path: Path, name: str) -> Path:
    suite = demo_subset(tmp_path, name, 2)
    first = json.loads((suite / "tasks.jsonl").read_text().splitlines()[0])["id"]
    (suite / "run-eval.py").rename(suite / "grade_real.py")
    (suite / "run-eval.py").write_text(ENV_GRADER.replace("{first!r}", repr(first)))
    return suite


def every_byte(root: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink())


def test_planted_key_is_nowhere_in_the_data_dir_nor_in_what_the_mutator_is_sent(server, tmp_path: Path) -> None:
    server.responder = demo_agent
    data = tmp_path / "data"
    train, val = env_printing_suite(tmp_path, "clean-train"), env_printing_suite(tmp_path, "clean-val")
    agent = tmp_path / "env_agent.py"
    agent.write_text(ENV_AGENT.replace("{fake!r}", repr(str(ROOT / "fakes" / "fake_agent.py"))))
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY=PLANTED_KEY, MY_SERVICE_TOKEN=PLANTED_TOKEN,
                    SOME_SETTING=PLANTED_SHAPE)
    done = run_py("--suite", str(train), "--val", str(val), "--real", "--agent", "command", "--agent-cmd",
                  f"{sys.executable} {agent}", "--pass-env", "MY_SERVICE_TOKEN", "--pass-env", "SOME_SETTING",
                  "--no-solve", "--rounds", "1", "--replicates", "1", "--data-dir", str(data),
                  "--sandbox", "none", env=env)  # bare processes: the allow-list and redaction alone keep the key out
    assert done.returncode == 0, done.stderr[-4000:]
    db = connect_readonly(data / "mutator.db")
    cells = [dict(r) for r in db.query("select * from cells")]
    # status only: the fake agent's seeded skips (its seeds hash the agent command, so this checkout's path) move
    # scores, never whether a cell ran
    assert cells and all(c["status"] == "ok" for c in cells)
    # the grader printed its environment; what was kept of it is redacted (a grader_error would stop the run
    # now, so the grader succeeds and its stderr log is what is checked)
    assert any(REDACTED in p.read_text() for p in data.rglob("grade.stderr"))
    streams = b"".join(p.read_bytes() for p in data.rglob("stream.jsonl"))
    assert REDACTED.encode() in streams                    # the agent did print the values it was given
    assert b"MY_SERVICE_TOKEN" in streams                  # --pass-env passed it ...
    assert b"ANTHROPIC_API_KEY" not in streams             # ... while the build agent never had the key at all
    db.conn.close()
    everything = every_byte(data)                          # files, mutator.db and its WAL, workspaces, genomes
    sent = json.dumps(server.requests).encode()            # every byte the models (the mutator) were sent
    for planted in (PLANTED_KEY, PLANTED_TOKEN, PLANTED_SHAPE):
        assert planted.encode() not in everything, planted
        assert planted.encode() not in sent, planted


def test_the_agents_bash_tool_never_sees_the_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED_KEY)
    monkeypatch.setenv("GITHUB_TOKEN", PLANTED_TOKEN)
    monkeypatch.setenv("SM_MODEL", "claude-haiku-4-5")
    out = build_toolbox(tmp_path).run("bash", {"command": "env"})
    assert PLANTED_KEY not in out and PLANTED_TOKEN not in out and "SM_MODEL=claude-haiku-4-5" in out


def test_allow_list_passes_only_what_the_process_needs(tmp_path: Path) -> None:
    source = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "HOME": "/root", "ANTHROPIC_API_KEY": PLANTED_KEY,
              "AWS_SECRET_ACCESS_KEY": "aws-secret-0000", "SM_PASS_ENV": "MY_FLAG", "MY_FLAG": "1",
              "OTHER": "x", "SM_JUDGE": "fake", "FAKE_AGENT_HANG": "1"}
    user = allowed_env(home=tmp_path, argv=("python", "my_agent.py"), source=source)
    assert user == {"PATH": "/usr/bin", "LANG": "C.UTF-8", "HOME": str(tmp_path), "SM_PASS_ENV": "MY_FLAG",
                    "MY_FLAG": "1", "SM_JUDGE": "fake", "FAKE_AGENT_HANG": "1"}
    ours = allowed_env(home=tmp_path, argv=(sys.executable, str(ROOT / "eval" / "agents" / "anthropic_agent.py")),
                       source=source)
    assert ours["ANTHROPIC_API_KEY"] == PLANTED_KEY and "AWS_SECRET_ACCESS_KEY" not in ours


def test_redact_names_shapes_and_leaves_ordinary_text() -> None:
    source = {"MY_API_KEY": "abcdefgh12345678", "DB_PASSWORD": "hunter2hunter2", "SHORT_TOKEN": "1",
              "PATH": "/usr/bin/secretish"}
    text = "key abcdefgh12345678 pw hunter2hunter2 bare sk-ant-api03-XYZxyz_123-abc token 1 path /usr/bin/secretish"
    assert redact(text, source) == (f"key {REDACTED} pw {REDACTED} bare {REDACTED} token 1 path /usr/bin/secretish")
    assert redact(None, source) is None and redact("", source) == ""


@pytest.mark.parametrize("launcher_id", ["none", "bwrap"])
def test_the_sdk_agents_bash_tool_finds_the_key_in_no_environment(server, tmp_path: Path, launcher_id: str) -> None:
    """Launched as the harness launches it (the key through the secret pipe), the SDK agent calls the API with
    the key, while its bash tool finds it neither in `env` nor, under bwrap, in any /proc/PID/environ."""
    launcher = launcher_or_skip(launcher_id)
    work = tmp_path / "work"
    work.mkdir()

    def model(body: dict) -> object:
        if not tool_history(body):
            return message(tool_use("bash", {"command": EVERY_ENVIRON if launcher_id == "bwrap" else ENV_ONLY}),
                           stop="tool_use", use=usage(10, 5))
        return message(text("Done."), use=usage(10, 2))
    server.responder = model
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Show the environment.")
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY=PLANTED_KEY, SM_MODEL="claude-haiku-4-5",
                    SM_STREAM=str(tmp_path / "stream.jsonl"), SM_PROMPT_FILE=str(prompt), SM_MAX_TURNS="4")
    agent = [sys.executable, str(ROOT / "eval" / "agents" / "anthropic_agent.py"), "--role", "build"]
    proc = run_backend(agent, env, launcher=launcher, cwd=work, writable=[tmp_path], readable=[ROOT])
    assert proc.returncode == 0, proc.stderr
    results = [r for body in server.requests for _call, r, _err in tool_history(body)]
    assert results and "ENV-DONE" in results[-1] and "SM_MODEL=claude-haiku-4-5" in results[-1]
    assert not leaks(results, PLANTED_KEY), f"the key is readable in: {leaks(results, PLANTED_KEY)}"
    assert set(server.auth_keys) == {PLANTED_KEY}      # the agent itself did call the API with it


PROBE = """import subprocess, sys
sys.path.insert(0, {agents!r})
import hide
if sys.argv[1:] == ["undumpable"]:
    assert hide.undumpable()
done = subprocess.run(["sh", "-c", "head -c 64 /proc/$PPID/mem >/dev/null 2>&1; head -c 64 /proc/$PPID/maps"],
                      capture_output=True, text=True)
print("READABLE" if done.returncode == 0 else "DENIED")
"""


def test_under_bwrap_a_tool_cannot_read_the_memory_of_a_backend_that_is_not_dumpable(tmp_path: Path) -> None:
    """Where the key lives once it came through the pipe (the backend's memory): a child of the backend, as a
    tool is, reads its parent's /proc/PID/maps only while the parent is dumpable."""
    launcher = launcher_or_skip("bwrap")
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.format(agents=str(ROOT / "eval" / "agents")))
    seen = {}
    for mode in ("dumpable", "undumpable"):
        argv = launcher.wrap([sys.executable, str(probe), mode], cwd=tmp_path, writable=[],
                             readable=[ROOT / "eval" / "agents"], network=False)
        seen[mode] = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip()
    assert seen == {"dumpable": "READABLE", "undumpable": "DENIED"}
