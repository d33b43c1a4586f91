"""run.py's subcommands (issue 46 item 4): each with its own --help, every old mode flag an alias giving
the same namespace and output, no flag abbreviations (an unknown flag named with the closest real one, exit
2), and a `skill-mutator` console script running the same parser."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from mutator.cli.main import main
from mutator.config import ROOT

# (subcommand form, old mode-flag form): the same command
ALIASES = [
    (["run", "--suite", "a", "--val", "b", "--rounds", "3"], ["--suite", "a", "--val", "b", "--rounds", "3"]),
    (["serve", "--suite", "a", "--val", "b", "--port", "1"],
     ["--serve", "--suite", "a", "--val", "b", "--port", "1"]),
    (["serve"], ["--serve"]),
    (["plan", "--suite", "a", "--val", "b", "--holdout", "c"],
     ["--plan", "--suite", "a", "--val", "b", "--holdout", "c"]),
    (["test", "R1", "--suite", "x", "--no-control"], ["--test-run", "R1", "--suite", "x", "--no-control"]),
    (["compare", "A", "B", "--suite", "x"], ["--compare", "A", "B", "--suite", "x"]),
    (["aa", "5", "--suite", "a", "--val", "b"], ["--aa", "5", "--suite", "a", "--val", "b"]),
    (["check", "sk", "--suite", "a", "--suite", "b"], ["--check", "sk", "--suite", "a", "--suite", "b"]),
    (["propose", "R"], ["--propose", "R"]),
    (["accept", "3", "--to", "d", "--note", "n"], ["--accept", "3", "--to", "d", "--note", "n"]),
    (["deploy", "3", "--to", "d"], ["--accept", "3", "--to", "d"]),
    (["reject", "3", "--reason", "r"], ["--reject", "3", "--reason", "r"]),
    (["rollback", "d"], ["--rollback", "d"]),
    (["audit", "R", "--out", "x.json"], ["--audit", "R", "--out", "x.json"]),
    (["daily-budget", "5"], ["--daily-budget-usd", "5"]),
    (["annotate", "R", "--name", "n"], ["--annotate", "R", "--name", "n"]),
    (["lint", "d", "--against", "p"], ["--lint", "d", "--against", "p"]),
    (["export", "R", "--format", "csv"], ["--export", "R", "--format", "csv"]),
    (["import-harbor", "d", "--out", "o", "--seed", "2"],
     ["--import-harbor", "d", "--out", "o", "--seed", "2"]),
    (["validate-suite", "s"], ["--validate-suite", "s"]),
    (["new-suite", "n", "--skill-dir", "sk", "--grader", "judge", "--from-evals", "e.json"],
     ["--new-suite", "n", "--skill-dir", "sk", "--grader", "judge", "--from-evals", "e.json"]),
    (["import-evals", "e.json", "--out", "o"], ["--import-evals", "e.json", "--out", "o"]),
    (["mine", "~/x", "--out", "o", "--judge"], ["--mine-traces", "~/x", "--out", "o", "--judge"]),
    (["watch", "~/x", "--out", "o", "--once", "--rounds", "2"],
     ["--watch", "~/x", "--out", "o", "--once", "--rounds", "2"]),
]
NAMES = ["run", "serve", "plan", "test", "compare", "aa", "check", "propose", "accept", "reject", "deploy",
         "rollback", "audit", "daily-budget", "annotate", "lint", "export", "import-harbor", "validate-suite",
         "import-evals", "mine", "watch", "new-suite"]


def stopped(capsys, *argv: str) -> tuple[int, str, str]:
    """run.py's exit code, stdout and stderr when parsing argv stops it before any command runs."""
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err


def run_py(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_plan_help_lists_only_the_plans_flags(capsys):
    code, out, _ = stopped(capsys, "plan", "--help")
    assert code == 0 and out.startswith("usage: run.py plan")
    listed = set(re.findall(r"^  (--[\w-]+)", out, re.M))   # the flags it lists (not those its helps name)
    assert {"--suite", "--val", "--holdout", "--rounds", "--replicates", "--model", "--real",
            "--data-dir"} <= listed
    assert not listed & {"--port", "--serve", "--budget-usd", "--test-run", "--aa", "--accept", "--watch",
                         "--plan"}


@pytest.mark.parametrize("name", NAMES)
def test_each_subcommand_has_its_own_help(capsys, name):
    code, out, _ = stopped(capsys, name, "--help")
    assert code == 0 and out.startswith(f"usage: run.py {name}")


# no --suite: on code that still takes prefixes these fail fast (a missing suite), never start a run
@pytest.mark.parametrize("argv", [["--budget", "0.5"], ["run", "--budget", "0.5"], ["--budget=0.5"]])
def test_an_abbreviated_flag_is_refused_naming_the_real_one(capsys, tmp_path, argv):
    code, _, err = stopped(capsys, *argv, "--data-dir", str(tmp_path))
    assert code == 2
    assert "unknown flag --budget; did you mean --budget-usd?" in err


def test_replicate_is_not_taken_for_replicates(capsys, tmp_path):
    code, _, err = stopped(capsys, "--replicate", "3", "--data-dir", str(tmp_path))
    assert code == 2 and "unknown flag --replicate; did you mean --replicates?" in err


def test_a_flag_of_another_command_says_where_it_belongs(capsys):
    code, _, err = stopped(capsys, "plan", "--port", "5211")
    assert code == 2 and "--port is not a flag of `run.py plan`; it goes with: serve" in err
    code, _, err = stopped(capsys, "run", "--plan")
    assert code == 2 and "it goes with: plan" in err


def test_an_unknown_command_names_the_closest(capsys):
    code, _, err = stopped(capsys, "plna", "--suite", "x")
    assert code == 2 and "unknown command plna; did you mean plan?" in err
    code, _, err = stopped(capsys, "new-suite")          # its NAME is required
    assert code == 2 and "NAME" in err


@pytest.mark.parametrize(("new", "old"), ALIASES, ids=[new[0] + str(i) for i, (new, _) in enumerate(ALIASES)])
def test_an_old_mode_flag_and_its_subcommand_parse_alike(new, old):
    from mutator.cli.parse import parse
    assert vars(parse(new)) == vars(parse(old))


def test_the_readme_commands_parse_as_before():
    from mutator.cli.parse import parse
    demo = parse(["--serve", "--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test",
                  "--rounds", "6", "--replicates", "4"])
    assert (demo.serve, demo.suite, demo.holdout, demo.rounds, demo.replicates) == (True, "clean-train",
                                                                                     "clean-test", 6, 4)
    assert not (demo.plan or demo.test_run or demo.compare or demo.check)
    assert parse([]).suite is None and parse(["--test-run", "R"]).test_run == "R"


def test_the_plan_alias_and_its_subcommand_print_the_same(tmp_path):
    common = ("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test",
              "--data-dir", str(tmp_path / "data"))
    old, new = run_py("--plan", *common, cwd=tmp_path), run_py("plan", *common, cwd=tmp_path)
    assert old.returncode == 0, old.stderr[-2000:]
    assert (new.returncode, new.stdout, new.stderr) == (old.returncode, old.stdout, old.stderr)


def test_the_console_script_runs_the_same_parser(monkeypatch, capsys):
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = scripts["skill-mutator"].split(":")
    assert (module, function) == ("mutator.cli.console", "console")
    from mutator.cli.console import console
    monkeypatch.setattr(sys, "argv", ["skill-mutator", "plan", "--help"])
    with pytest.raises(SystemExit) as stop:
        console()
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("usage: run.py plan")
