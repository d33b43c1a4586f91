"""The fake build agent as a real subprocess: outputs, stream shape, turns, noise, hooks."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes.csv_rules import apply_rules, read_csv

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "fakes" / "fake_agent.py"
SEED_SKILL = ROOT / "suites" / "csv-clean"
FIXTURES = ROOT / "suites" / "clean-train" / "fixtures"
ALL_OPS = ["trim", "headers", "dates", "amounts", "booleans", "emails", "dedupe"]
PROMPT = "The file input.csv is messy. Normalise it following the skill and write output.csv."


def make_cell(tmp_path: Path, name: str = "cell") -> Path:
    cell = tmp_path / name
    cell.mkdir()
    task = sorted(FIXTURES.iterdir())[0]
    shutil.copy(task / "input.csv", cell / "input.csv")
    return cell


def make_skill(tmp_path: Path, ops: list[str]) -> Path:
    skill = tmp_path / "skill" / "csv-clean"
    shutil.copytree(SEED_SKILL, skill)
    (skill / "rules.json").write_text(json.dumps([{"id": op, "op": op} for op in ops]))
    return skill


def run_agent(cell: Path, skill: Path | None, seed: int = 0, prompt: str = PROMPT, **extra: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "FAKE_"))}
    env.update({"SM_STREAM": str(cell / "stream.jsonl"), "SM_MODEL": "fake-model", "SM_CELL_SEED": str(seed)})
    if skill is not None:
        env["SM_SKILL_DIR"] = str(skill)
    env.update(extra)
    proc = subprocess.run(
        [sys.executable, str(AGENT)],
        cwd=cell,
        input=prompt,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc, [json.loads(line) for line in (cell / "stream.jsonl").read_text().splitlines()]


def test_seed_skill_run_writes_output_and_a_complete_stream(tmp_path):
    cell = make_cell(tmp_path)
    skill = make_skill(tmp_path, ["trim", "headers"])
    proc, events = run_agent(cell, skill)
    assert proc.returncode == 0, proc.stderr
    assert (cell / "output.csv").is_file()
    init, result = events[0], events[-1]
    assert init["type"] == "system" and init["subtype"] == "init"
    assert init["model"] == "fake-model" and init["skills"] == ["csv-clean"]
    assert result["type"] == "result" and result["subtype"] == "success" and result["is_error"] is False
    assert result["num_turns"] == 2 + 2
    uses = [e for e in events if e["type"] == "assistant"]
    results = [e for e in events if e["type"] == "user"]
    assert len(uses) == len(results) == 4
    for use, res in zip(uses, results):
        assert use["message"]["content"][0]["id"] == res["message"]["content"][0]["tool_use_id"]
    assert result["usage"]["input_tokens"] == sum(e["message"]["usage"]["input_tokens"] for e in uses)
    assert result["usage"]["output_tokens"] == 80 * 4


def test_turns_and_tokens_grow_with_rules_and_skill_size(tmp_path):
    cell_a, cell_b = make_cell(tmp_path, "a"), make_cell(tmp_path, "b")
    _, small = run_agent(cell_a, make_skill(tmp_path / "s", ["trim"]))
    big_skill = make_skill(tmp_path / "b", ALL_OPS)
    (big_skill / "notes.md").write_text("x" * 8000)
    _, big = run_agent(cell_b, big_skill)
    assert small[-1]["num_turns"] == 3 and big[-1]["num_turns"] == 2 + len(ALL_OPS)
    per_turn_small = small[1]["message"]["usage"]["input_tokens"]
    per_turn_big = big[1]["message"]["usage"]["input_tokens"]
    assert per_turn_big >= per_turn_small + 2000


def test_output_is_the_rules_applied_when_no_rule_is_skipped(tmp_path):
    for seed in range(50):  # find a seed where the 8% skip noise spared every rule
        cell = make_cell(tmp_path, f"c{seed}")
        run_agent(cell, make_skill(tmp_path / f"s{seed}", ALL_OPS), seed=seed)
        if read_csv(cell / "output.csv") == apply_rules(read_csv(cell / "input.csv"), ALL_OPS):
            return
    pytest.fail("no seed in 0..49 applied every rule")


def test_same_seed_same_output_and_seeds_eventually_differ(tmp_path):
    skill = make_skill(tmp_path, ALL_OPS)
    outputs = []
    for i, seed in enumerate([7, 7]):
        cell = make_cell(tmp_path, f"same{i}")
        run_agent(cell, skill, seed=seed)
        outputs.append((cell / "output.csv").read_bytes())
    assert outputs[0] == outputs[1]
    seen = set()
    for seed in range(40):
        cell = make_cell(tmp_path, f"seed{seed}")
        run_agent(cell, skill, seed=seed)
        seen.add((cell / "output.csv").read_bytes())
        if len(seen) > 1:
            return
    pytest.fail("40 seeds all produced the same output")


def test_without_a_skill_the_input_is_copied_in_two_turns(tmp_path):
    cell = make_cell(tmp_path)
    proc, events = run_agent(cell, None)
    assert proc.returncode == 0
    assert read_csv(cell / "output.csv") == read_csv(cell / "input.csv")
    assert events[0]["skills"] == [] and events[-1]["num_turns"] == 2


def test_file_names_come_from_the_prompt(tmp_path):
    cell = make_cell(tmp_path)
    (cell / "input.csv").rename(cell / "raw_orders.csv")
    prompt = "Clean raw_orders.csv with the skill and save it as tidy.csv please."
    proc, events = run_agent(cell, make_skill(tmp_path, ["trim"]), prompt=prompt)
    assert proc.returncode == 0 and events[-1]["subtype"] == "success"
    assert (cell / "tidy.csv").is_file() and not (cell / "output.csv").exists()


def test_prompt_file_is_read_when_given(tmp_path):
    cell = make_cell(tmp_path)
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text("Normalise input.csv into result.csv.")
    run_agent(cell, make_skill(tmp_path, ["trim"]), prompt="", SM_PROMPT_FILE=str(prompt_file))
    assert (cell / "result.csv").is_file()


def test_max_turns_stops_early_with_an_error_result(tmp_path):
    cell = make_cell(tmp_path)
    proc, events = run_agent(cell, make_skill(tmp_path, ALL_OPS), SM_MAX_TURNS="3")
    assert proc.returncode == 0
    result = events[-1]
    assert result["subtype"] == "error_max_turns" and result["is_error"] is True
    assert result["num_turns"] == 3
    assert not (cell / "output.csv").exists()


def test_missing_input_is_an_error_result_not_a_crash(tmp_path):
    cell = tmp_path / "empty"
    cell.mkdir()
    proc, events = run_agent(cell, make_skill(tmp_path, ["trim"]))
    assert proc.returncode == 0
    assert events[-1]["subtype"] == "error_during_execution" and events[-1]["is_error"] is True


def test_crash_hook_exits_3_without_a_result(tmp_path):
    cell = make_cell(tmp_path)
    proc, events = run_agent(cell, make_skill(tmp_path, ["trim"]), FAKE_AGENT_CRASH="1")
    assert proc.returncode == 3 and proc.stderr.strip()
    assert [e["type"] for e in events] == ["system"]


def test_hang_hook_writes_init_then_keeps_running(tmp_path):
    cell = make_cell(tmp_path)
    stream = cell / "stream.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "FAKE_"))}
    env.update({"SM_STREAM": str(stream), "FAKE_AGENT_HANG": "1"})
    proc = subprocess.Popen([sys.executable, str(AGENT)], cwd=cell, env=env, stdin=subprocess.PIPE)
    proc.stdin.write(PROMPT.encode())
    proc.stdin.close()
    try:
        deadline = time.monotonic() + 30
        while not (stream.exists() and stream.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert json.loads(stream.read_text().splitlines()[0])["subtype"] == "init"
        time.sleep(0.3)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_request_with_no_csv_gets_a_text_answer_from_the_skill(tmp_path):
    """Mined tasks (a question, nothing staged): the answer is the skill's items sharing a stem with the request,
    so a skill that says more about dates answers a dates question better, deterministically."""
    cell = tmp_path / "cell"
    cell.mkdir()
    prompt = "How should I write the order dates in the shop export?"

    def answer(skill: Path) -> str:
        run_agent(cell, skill, prompt=prompt)
        events = [json.loads(line) for line in (cell / "stream.jsonl").read_text().splitlines()]
        (cell / "stream.jsonl").unlink()
        assert events[-1]["type"] == "result" and events[-1]["subtype"] == "success"
        return next(b["text"] for e in events if e["type"] == "assistant" for b in e["message"]["content"]
                    if b["type"] == "text")

    seed = make_skill(tmp_path, ["trim", "headers"])
    before = answer(seed)
    assert "order_date" in before and "YYYY-MM-DD" not in before and not list(cell.iterdir())
    with (seed / "SKILL.md").open("a") as f:
        f.write("\n- `dates`: convert every date column to ISO `YYYY-MM-DD`.\n")
    after = answer(seed)
    assert "YYYY-MM-DD" in after and after == answer(seed)
