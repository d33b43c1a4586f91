"""Every bad input is one exit-2 line naming the problem and the fix, before anything is written or spent.

Each case runs run.py as a user would; the data dir is compared before and after (byte for byte).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

DEMO = ("--suite", "clean-train", "--val", "clean-val", "--rounds", "1", "--replicates", "1")


@dataclass
class Case:
    args: tuple[str, ...]
    says: tuple[str, ...]                       # every one of these is in the one line
    env: dict[str, str] = field(default_factory=dict)
    setup: Callable[[Path], None] = lambda tmp: None


def config_with(tmp: Path, change: Callable[[dict], None]) -> None:
    tree = json.loads((ROOT / "config.json").read_text())
    tree["skillDir"] = str(ROOT / tree["skillDir"])
    tree["suites"] = {name: str(ROOT / path) for name, path in tree["suites"].items()}
    change(tree)
    (tmp / "config.json").write_text(json.dumps(tree))


def seed_skill(text: str, folder: str = "my-skill") -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / folder).mkdir()
        (tmp / folder / "SKILL.md").write_text(text)
    return make


def evals_json(tmp: Path) -> None:
    """A skill with a skill-creator eval set of two evals (enough to split), which imports cleanly elsewhere."""
    seed_skill("---\nname: my-skill\ndescription: d\n---\nBody.\n")(tmp)
    (tmp / "my-skill" / "evals").mkdir()
    evals = [{"id": i, "prompt": f"Task {i}.", "expectations": ["It is done"]} for i in (1, 2)]
    (tmp / "my-skill" / "evals" / "evals.json").write_text(json.dumps({"skill_name": "my-skill", "evals": evals}))


def damaged_store(tmp: Path) -> None:
    from mutator.store.db import connect
    db = connect(tmp / "data" / "mutator.db")
    db["runs"].insert({"id": "run-0", "status": "finished", "kind": "evolve"})
    db.conn.close()
    path = tmp / "data" / "mutator.db"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def file_where_the_data_dir_goes(tmp: Path) -> None:
    (tmp / "blocker").write_text("a file, not a folder\n")


CASES = {
    "config-suite-not-a-string": Case(
        ("--config", "{tmp}/config.json", *DEMO), ("'suites.clean-val' must be a folder path string",),
        setup=lambda tmp: config_with(tmp, lambda tree: tree["suites"].update({"clean-val": 5}))),
    "env-nan": Case(DEMO, ("SKILL_MUTATOR_MIN_IMPROVEMENT", "finite number"),
                    env={"SKILL_MUTATOR_MIN_IMPROVEMENT": "nan"}),
    "env-inf": Case(DEMO, ("SKILL_MUTATOR_GATE_Z", "finite number"), env={"SKILL_MUTATOR_GATE_Z": "inf"}),
    "flag-nan": Case((*DEMO, "--solve-min-score", "nan"), ("--solve-min-score", "finite number")),
    "budget-inf": Case((*DEMO, "--daily-budget-usd", "inf"), ("--daily-budget-usd", "finite number")),
    "config-price-nan": Case(
        ("--config", "{tmp}/config.json", *DEMO), ("claude-haiku-4-5.input", "non-negative number"),
        setup=lambda tmp: config_with(tmp, lambda tree: tree["pricing"]["claude-haiku-4-5"].update(
            {"input": float("nan")}))),
    "env-typo": Case(DEMO, ("SKILL_MUTATOR_REPLICATE", "did you mean SKILL_MUTATOR_REPLICATES"),
                     env={"SKILL_MUTATOR_REPLICATE": "5"}),
    "seed-no-frontmatter": Case((*DEMO, "--skill-dir", "{tmp}/my-skill"), ("seed skill", "frontmatter"),
                                setup=seed_skill("Clean CSV files.\n")),
    "seed-bad-name": Case((*DEMO, "--skill-dir", "{tmp}/my-skill"), ("seed skill", "must be lowercase"),
                          setup=seed_skill("---\nname: My_Skill\ndescription: Cleans CSV files.\n---\nBody.\n")),
    "agent-cmd-without-real": Case((*DEMO, "--agent", "command", "--agent-cmd", "python my_agent.py"),
                                   ("--agent-cmd", "without --real", "add --real")),
    "train-suite-is-val": Case(("--suite", "clean-val-expect", "--val", "clean-val", "--rounds", "1"),
                               ("--suite clean-val-expect", "split: val", "--allow-split-mismatch")),
    "holdout-is-val": Case((*DEMO, "--holdout", "clean-val-expect"),
                           ("--holdout clean-val-expect", "split: val", "--allow-split-mismatch")),
    "damaged-store": Case(DEMO, ("`mutator.db` is damaged", "move it aside"), setup=damaged_store),
    "damaged-store-export": Case(("--export", "run-0"), ("`mutator.db` is damaged",), setup=damaged_store),
    "data-dir-not-writable": Case((*DEMO, "--data-dir", "{tmp}/blocker/data"),
                                  ("`mutator.db` is not writable", "--data-dir"), setup=file_where_the_data_dir_goes),
    # the second catalogue: each refused before the run opens or anything is spent or written
    "models-one-unpriced": Case((*DEMO, "--model", "claude-haiku-4-5,gpt-4o"),
                                ("--model claude-haiku-4-5,gpt-4o", "'gpt-4o' has no price", "pricing")),
    "ray-address-without-ray": Case((*DEMO, "--ray-address", "auto"), ("--ray-address auto", "--executor ray")),
    "ray-timeout-without-ray": Case((*DEMO, "--ray-timeout-s", "5"), ("--ray-timeout-s", "--executor ray")),
    "ray-address-malformed": Case((*DEMO, "--executor", "ray", "--ray-address", "http//head"),
                                  ("--ray-address", "HOST:PORT", "'http//head'")),
    "ray-address-bad-port": Case((*DEMO, "--executor", "ray", "--ray-address", "head:99999"),
                                 ("--ray-address", "HOST:PORT")),
    "ray-unreachable": Case((*DEMO, "--executor", "ray", "--ray-address", "127.0.0.1:1", "--ray-timeout-s", "30"),
                            ("--ray-address 127.0.0.1:1", "cannot reach", "--ray-timeout-s")),
    "mine-out-inside-a-suite": Case(("--mine-traces", "{tmp}", "--out", "{tmp}/suite/mined"),
                                    ("--out", "inside the suite", "suite.md", "pick a new folder"),
                                    setup=lambda tmp: seed_skill("x", "suite")(tmp) or
                                    (tmp / "suite" / "suite.md").write_text("---\nname: s\n---\n")),
    "mine-out-inside-the-skill": Case(("--mine-traces", "{tmp}", "--out", "{tmp}/my-skill/mined", "--skill-dir",
                                       "{tmp}/my-skill"), ("--out", "inside the skill"),
                                      setup=seed_skill("---\nname: my-skill\ndescription: d\n---\nBody.\n")),
    "mine-out-inside-the-data-dir": Case(("--mine-traces", "{tmp}", "--out", "{tmp}/data/mined"),
                                         ("--out", "inside the data dir")),
    "import-evals-out-inside-a-suite": Case(("--import-evals", "{tmp}/my-skill/evals/evals.json", "--out",
                                             "{tmp}/suite/imported"),
                                            ("--out", "inside the suite", "suite.md", "pick a new folder"),
                                            setup=lambda tmp: evals_json(tmp) or seed_skill("x", "suite")(tmp) or
                                            (tmp / "suite" / "suite.md").write_text("---\nname: s\n---\n")),
    "import-evals-out-inside-the-skill": Case(("--import-evals", "{tmp}/my-skill/evals/evals.json", "--out",
                                               "{tmp}/my-skill/imported"), ("--out", "inside the skill"),
                                              setup=lambda tmp: evals_json(tmp)),
    "import-evals-out-inside-the-data-dir": Case(("--import-evals", "{tmp}/my-skill/evals/evals.json", "--out",
                                                  "{tmp}/data/imported"), ("--out", "inside the data dir"),
                                                 setup=lambda tmp: evals_json(tmp) or (tmp / "data").mkdir()),
    "test-run-unknown-run": Case(("--test-run", "run-nope"), ("no run 'run-nope'", "--data-dir")),
    "compare-unknown-run": Case(("--compare", "run-a", "run-b"), ("no run 'run-a'", "--data-dir")),
    "seed-binary-skill-md": Case((*DEMO, "--skill-dir", "{tmp}/my-skill"),
                                 ("seed skill", "my-skill/SKILL.md: not UTF-8", "save it as UTF-8"),
                                 setup=lambda tmp: seed_skill("")(tmp) or (tmp / "my-skill" / "SKILL.md").write_bytes(
                                     b"---\nname: my-skill\ndescription: \xff\xfe\x00binary\n---\n")),
    "lint-binary-skill-md": Case(("--lint", "{tmp}/my-skill"), ("--lint", "my-skill/SKILL.md: not UTF-8"),
                                 setup=lambda tmp: seed_skill("")(tmp) or (tmp / "my-skill" / "SKILL.md").write_bytes(
                                     b"\x89PNG\r\n\x1a\n")),
    "mine-empty-traces-folder": Case(("--mine-traces", "{tmp}/traces", "--out", "{tmp}/suites/mined"),
                                     ("--mine-traces", "/traces: no agent session found", "~/.claude/projects"),
                                     setup=lambda tmp: (tmp / "traces").mkdir()),
    "gate-method-bad": Case((*DEMO, "--gate-method", "bogus"), ("--gate-method", "'bogus'", "signflip", "--help")),
}


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes, less SQLite's own reader files (a read-only open of a WAL store makes an index
    `-shm` and an empty `-wal`: no data of ours)."""
    def ours(p: Path) -> bool:
        return not (p.name.endswith("-shm") or (p.name.endswith("-wal") and p.stat().st_size == 0))
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(root.rglob("*")) if ours(p)}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_exit_2_line_and_writes_nothing(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    case.setup(tmp_path)
    before = snapshot(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILL_MUTATOR_", "ANTHROPIC_"))}
    args = [a.replace("{tmp}", str(tmp_path)) for a in case.args]
    if "--data-dir" not in args:
        args += ["--data-dir", str(tmp_path / "data")]
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, capture_output=True, text=True,
                          env={**env, **case.env}, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    for words in case.says:
        assert words in lines[0], lines[0]
    assert snapshot(tmp_path) == before  # nothing written: no store, no cells, no workspace


def test_split_mismatch_runs_when_allowed(tmp_path: Path) -> None:
    """--allow-split-mismatch lets a deliberate choice through (here to --plan, which spends nothing)."""
    args = ("--plan", "--suite", "clean-val-expect", "--val", "clean-val", "--rounds", "1",
            "--data-dir", str(tmp_path / "data"))
    refused = subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "--allow-split-mismatch" in refused.stderr
    allowed = subprocess.run([sys.executable, str(ROOT / "run.py"), *args, "--allow-split-mismatch"], cwd=ROOT,
                             capture_output=True, text=True)
    assert allowed.returncode == 0, allowed.stderr[-2000:]


@pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bwrap for a read-only mount (root ignores chmod)")
def test_read_only_data_dir_refuses_a_run_and_exports_elsewhere(tmp_path: Path) -> None:
    from mutator.store.db import connect
    data = tmp_path / "data"
    db = connect(data / "mutator.db")
    db["runs"].insert({"id": "run-0", "status": "finished", "kind": "evolve", "created_at": 1.0})
    db.conn.close()
    before = snapshot(data)

    def ro(*args: str) -> subprocess.CompletedProcess:
        argv = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--ro-bind", str(data), str(data),
                sys.executable, str(ROOT / "run.py"), *args, "--data-dir", str(data)]
        return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    run = ro(*DEMO)
    assert run.returncode == 2 and run.stderr.startswith("error: `mutator.db` is not writable"), run.stderr[-2000:]
    export = ro("--export", "run-0")
    assert export.returncode == 2 and "not writable" in export.stderr and "--out" in export.stderr, export.stderr
    assert len(export.stderr.strip().splitlines()) == 1
    elsewhere = ro("--export", "run-0", "--out", str(tmp_path / "tables"))
    assert elsewhere.returncode == 0, elsewhere.stderr[-2000:]
    assert (tmp_path / "tables" / "run-0-attempts.csv").is_file()
    assert snapshot(data) == before
