"""What a graded cell keeps to be graded again: the agent's outputs only, and its inputs put back from the fixtures."""

from __future__ import annotations

import json
from pathlib import Path

from eval.kept import put_back, regradable, slim


def cell(tmp_path: Path) -> tuple[Path, Path]:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    for name in ("a.csv", "b.csv", "c.csv"):
        (fixtures / name).write_text(f"input {name}\n")
    root = tmp_path / "evals" / "k" / "t0__r0"
    work = root / "work"
    (work / ".claude").mkdir(parents=True)
    (work / "a.csv").write_text("input a.csv\n")            # left as staged
    (work / "b.csv").write_text("edited by the agent\n")    # changed: an output
    (work / "out" / "result.csv").parent.mkdir()
    (work / "out" / "result.csv").write_text("x,y\n")       # c.csv was deleted by the agent
    (root / "stream.jsonl").write_text("{}\n")
    (root / "grade.json").write_text("{}")                  # the old grader's: never copied
    return root, fixtures


def files(work: Path) -> dict[str, str]:
    return {p.relative_to(work).as_posix(): p.read_text() for p in sorted(work.rglob("*")) if p.is_file()}


def test_slim_keeps_the_agents_outputs_and_put_back_rebuilds_the_working_dir(tmp_path: Path) -> None:
    root, fixtures = cell(tmp_path)
    before = files(root / "work")
    slim(root, fixtures, ["a.csv", "b.csv", "c.csv"])
    assert files(root / "work") == {"b.csv": "edited by the agent\n", "out/result.csv": "x,y\n"}
    assert json.loads((root / "restore.json").read_text()) == {"inputs": ["a.csv"]}
    assert regradable(root)
    target = tmp_path / "evals" / "k2" / "t0__r0"
    work = put_back(root, target, fixtures, ["a.csv", "b.csv", "c.csv"])
    assert files(work) == before                             # the deleted input stays deleted
    assert sorted(p.name for p in target.iterdir()) == ["stream.jsonl", "work"]
    assert files(root / "work") == {"b.csv": "edited by the agent\n", "out/result.csv": "x,y\n"}   # source untouched


def test_put_back_restores_only_the_tasks_own_inputs(tmp_path: Path) -> None:
    root, fixtures = cell(tmp_path)
    (tmp_path / "secret").write_text("not for the cell")
    (root / "restore.json").write_text(json.dumps({"inputs": ["../secret", "a.csv"]}))   # as an agent might
    work = put_back(root, root, fixtures, ["a.csv"])
    assert not (work.parent / "secret").exists() and (work / "a.csv").read_text() == "input a.csv\n"
    (root / "restore.json").write_text("[1, 2]")
    put_back(root, root, fixtures, ["a.csv"])                # garbage restores nothing, never raises


def test_outputs_over_the_cap_are_not_kept(tmp_path: Path, monkeypatch) -> None:
    import eval.kept
    root, fixtures = cell(tmp_path)
    monkeypatch.setattr(eval.kept, "KEEP_BYTES", 10)
    slim(root, fixtures, ["a.csv", "b.csv", "c.csv"])
    assert not (root / "work").exists() and not regradable(root)
