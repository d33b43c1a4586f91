"""The house's shape, checked from the source: no import circles between project files, arrows point
down (eval/, strategies/, sandbox/ and fakes/ never import mutator/), every room says what it is for,
and no module outside tests/ is named like a test."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mutator", "eval", "strategies", "sandbox", "fakes")
LOWER = ("eval", "strategies", "sandbox", "fakes")


def modules() -> dict[str, Path]:
    found = {"run": ROOT / "run.py"}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """Project modules this file imports, at any depth: a late import inside a function is still an edge, and
    so is one under `if TYPE_CHECKING:` (it never runs, but a circle of types still means the files cannot be
    read apart)."""
    edges: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for target in targets:
            # the deepest known module the name resolves to
            # (`from mutator.store import db` -> mutator.store.db)
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
    return edges


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    edges = {name: imports_of(path, name, known) for name, path in found.items()}
    # importing a.b.c runs a/__init__ and a/b/__init__ first: those are not edges worth a circle, so drop
    # package-init targets that are ancestors of the importer or of the imported module
    for name, targets in edges.items():
        edges[name] = {t for t in targets if not name.startswith(t + ".")}
    return edges


def find_circle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_circle_between_project_files():
    assert find_circle(graph()) is None, " -> ".join(find_circle(graph()) or [])


def js_graph() -> dict[str, set[str]]:
    """Each SPA module's static imports, as paths relative to webpages/."""
    web = ROOT / "webpages"
    edges: dict[str, set[str]] = {}
    for path in web.rglob("*.js"):
        if "vendor" in path.relative_to(web).parts:
            continue
        text = path.read_text(encoding="utf-8")
        targets = re.findall(r"^\s*(?:import|export)\b[^'\"]*?from\s+['\"](\.[^'\"]+)['\"]", text, re.M)
        name = str(path.relative_to(web))
        edges[name] = {os.path.normpath(os.path.join(os.path.dirname(name), t)) for t in targets}
    return edges


def test_no_import_circle_between_spa_modules():
    edges = js_graph()
    assert find_circle(edges) is None, " -> ".join(find_circle(edges) or [])
    assert "lib/shell.js" in edges["pages/home.js"]   # the graph is read at all


def test_the_circle_finder_finds_a_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


def test_a_type_only_import_is_an_edge(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import TYPE_CHECKING\n"
                      "if TYPE_CHECKING:\n    from mutator.round import failures\n")
    assert imports_of(sample, "mutator.round.x", {"mutator.round", "mutator.round.failures"}) == \
        {"mutator.round", "mutator.round.failures"}


@pytest.mark.parametrize("package", LOWER)
def test_lower_layers_never_import_mutator(package):
    edges = graph()
    upward = sorted(f"{name} -> {t}" for name, targets in edges.items() if name.split(".")[0] == package
                    for t in targets if t.split(".")[0] in ("mutator", "run"))
    assert upward == []


def test_the_store_imports_no_loop_or_upper_room():
    edges = graph()
    bad = sorted(f"{name} -> {t}" for name, targets in edges.items() if name.startswith("mutator.store")
                 for t in targets if t.startswith("mutator") and not t.startswith("mutator.store"))
    assert bad == []


ROUND_ROOMS = ("mutator.round", "mutator.scoring", "mutator.critic", "mutator.briefing", "mutator.config")
UPPER_ROOMS = ("mutator.validity", "mutator.after", "mutator.server", "mutator.mining")


def test_the_round_rooms_never_import_validity_after_or_server():
    edges = graph()
    bad = sorted(f"{name} -> {t}" for name, targets in edges.items() if name.startswith(ROUND_ROOMS)
                 for t in targets if t.startswith(UPPER_ROOMS))
    assert bad == []


def test_only_run_py_imports_the_cli_room():
    edges = graph()
    bad = sorted(f"{name} -> {t}" for name, targets in edges.items() if name != "run" and not
                 name.startswith("mutator.cli") for t in targets if t.startswith("mutator.cli"))
    assert bad == []


def test_scoring_and_the_critic_import_no_round_or_briefing():
    edges = graph()
    bad = sorted(f"{name} -> {t}" for name, targets in edges.items()
                 if name.startswith(("mutator.scoring", "mutator.critic"))
                 for t in targets if t.startswith(("mutator.round", "mutator.briefing")))
    assert bad == []


@pytest.mark.parametrize("room", ["mutator", "mutator/cli", "mutator/round", "mutator/scoring",
                                  "mutator/critic", "mutator/briefing", "mutator/store", "mutator/validity",
                                  "mutator/after", "mutator/server", "mutator/mining", "eval", "strategies",
                                  "sandbox", "fakes"])
def test_each_room_says_what_it_is_for_and_holds_nothing_else(room):
    init = ROOT / room / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree)
    assert doc and len(doc) > 40, f"{room}/__init__.py needs a docstring saying what the room is for"
    if room.startswith("mutator"):
        assert "import" in doc, f"{room}/__init__.py should say what the room may import"
        assert [type(n).__name__ for n in tree.body if not isinstance(n, ast.Expr)] == []


def test_mining_never_drives_the_loop_in_process_nor_imports_the_server():
    edges = graph()
    bad = sorted(f"{name} -> {t}" for name, targets in edges.items() if name.startswith("mutator.mining")
                 for t in targets
                 if t in ("mutator.round.loop", "mutator.server") or t.startswith("mutator.server."))
    assert bad == []


def test_no_module_outside_tests_is_named_like_a_test():
    named = sorted(str(p.relative_to(ROOT)) for package in PACKAGES + ("bench",)
                   for p in (ROOT / package).rglob("test_*.py"))
    assert named == []


def test_the_top_of_mutator_holds_only_its_init_and_the_config():
    loose = sorted(p.name for p in (ROOT / "mutator").glob("*.py"))
    assert loose == ["__init__.py", "config.py"], \
        "give each module a room: mutator/round, scoring, critic, ..."


TEST_DATA = {"fixtures", "artifacts", "__pycache__"}     # a test folder's data, not a room
WHOLE = {"test_layout.py", "test_layout_sql.py", "test_readme.py", "test_docs.py", "test_bad_inputs.py"}  # of the whole house


def mirror_strays(tests: Path) -> list[str]:
    """Test folders with no source folder of the same path (tests/eval/agents/ needs eval/agents/), and test
    files at the top of tests/ that are not tests of the whole house."""
    folders = [d.relative_to(tests) for d in tests.rglob("*") if d.is_dir()]
    strays = sorted(f"tests/{d}/" for d in folders if not set(d.parts) & TEST_DATA
                    and not d.parts[0].startswith(".") and not (ROOT / d).is_dir())
    return strays + sorted(f"tests/{p.name}" for p in tests.glob("test_*.py") if p.name not in WHOLE)


def test_tests_mirror_the_rooms_of_mutator():
    """Every test lives in its subject's room: tests for mutator/round/ in tests/mutator/round/, for
    eval/agents/ in tests/eval/agents/, for bench/ in tests/bench/; only fixtures/ and artifacts/ folders have
    no twin."""
    assert mirror_strays(ROOT / "tests") == []


def test_the_mirror_check_finds_a_stray(tmp_path: Path):
    for folder in ("store", "mutator/store/fixtures", "eval/agents"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "test_api.py").write_text("")
    assert mirror_strays(tmp_path) == ["tests/store/", "tests/test_api.py"]


def source_files() -> list[Path]:
    found = [ROOT / "run.py"]
    for package in PACKAGES + ("bench", "webpages"):
        for path in (ROOT / package).rglob("*"):
            vendored = "vendor" in path.relative_to(ROOT).parts
            if path.suffix in (".py", ".js", ".css", ".html") and not vendored:
                found.append(path)
    return sorted(found)


def test_no_source_file_past_the_split_size():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
             for p in source_files()}
    assert {name: n for name, n in sizes.items() if n > 450} == {}


def test_no_function_past_eighty_lines():
    long = []
    for path in source_files():
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if (size := node.end_lineno - node.lineno + 1) > 80:
                long.append(f"{path.relative_to(ROOT)}::{node.name} ({size} lines)")
    assert long == []


STRATEGY_NAMES = re.compile(r"\b(greedy|branching|population|pareto)\b")


def literals(tree: ast.AST) -> list[ast.Constant]:
    """The string literals of a module that are not docstrings (a docstring may name a strategy as prose)."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}
    return [n for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_the_dashboard_names_no_strategy():
    """The server reads what the loop decided; it never branches on a strategy's name (the launch form asks
    the strategy registry which exist), so a strategy that changes its rule cannot leave the dashboard
    disagreeing."""
    found = []
    for path in sorted((ROOT / "mutator" / "server").rglob("*.py")):
        for node in literals(ast.parse(path.read_text(encoding="utf-8"))):
            if STRATEGY_NAMES.search(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value[:40]!r}")
    assert found == []


WEIGHT_NAMES = {"w_cost", "w_steps", "wCost", "wSteps"}


def formula_sites(path: Path) -> list[str]:
    """Arithmetic on the composite's weights (the formula written out), by function, in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    owner: dict[int, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owner.update({id(n): fn.name for n in ast.walk(fn)})
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and any(
                (isinstance(n, ast.Name) and n.id in WEIGHT_NAMES)
                or (isinstance(n, ast.Attribute) and n.attr in WEIGHT_NAMES)
                or (isinstance(n, ast.Constant) and n.value in WEIGHT_NAMES) for n in ast.walk(node)):
            found.append(f"{path.relative_to(ROOT)}::{owner.get(id(node), '<module>')}")
    return found


def test_the_composite_formula_is_written_once():
    """eval − wCost·cost/seedCost − wSteps·steps/seedSteps is computed by mutator/scoring/score.py::composite
    and nowhere else: the loop, the gate, the reports, the dashboard and the benches call it."""
    sites = sorted({site for path in source_files() if path.suffix == ".py" for site in formula_sites(path)})
    assert sites == ["mutator/scoring/score.py::composite"]


AGENT_CALL = ROOT / "eval" / "agent_call.py"
SM_NAME = re.compile(r"^SM_[A-Z][A-Z0-9_]*$")
# SM_ names that are not the agent-process contract, each defined only in its own home.
OTHER_SM_HOMES = {
    "SM_PASS_ENV": {"eval/environment.py"},              # carries --pass-env to every child's allow-list
    "SM_SUITE_DIR": {"eval/graders/script.py"},                # the grader process contract
    "SM_CELL_DIR": {"eval/graders/script.py"},
    "SM_TASK_ID": {"eval/graders/script.py", "eval/graders/expect_runner.py"},
    "SM_ANTHROPIC_CACHE": {"bench/overhead.py"},         # the anthropic backend's own knob, set as users do
}


def sm_definitions(path: Path) -> list[tuple[str, int]]:
    """(name, line) of each place this file gives an SM_ variable a value or a constant spelling: a dict key,
    an item assignment (`env["SM_X"] = ...`), a keyword (`env.update(SM_X=...)`), a setdefault/putenv, or a
    constant (`X = "SM_X"`). Reading one (`os.environ.get("SM_X")`) is the agent's side and is not a
    definition: our backends and the fakes see only their own folder inside a sandbox, so they cannot import
    the module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[object] = []
        if isinstance(node, ast.Dict):
            names = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.slice.value for t in targets
                     if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)]
            if isinstance(node.value, ast.Constant):
                names.append(node.value.value)
        elif isinstance(node, ast.keyword):
            names = [node.arg]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("setdefault", "putenv") and node.args \
                and isinstance(node.args[0], ast.Constant):
            names = [node.args[0].value]
        found += [(name, node.lineno) for name in names if isinstance(name, str) and SM_NAME.match(name)]
    return sorted(found, key=lambda item: item[1])


def test_the_agent_process_contract_is_defined_in_the_agent_call_module_only():
    """One module (eval/agent_call.py) names the SM_* variables an agent is given; nothing else sets one."""
    from eval import agent_call
    assert set(agent_call.NAMES) >= {"SM_PROMPT_FILE", "SM_STREAM", "SM_SKILL_DIR", "SM_MODEL",
                                     "SM_MAX_TURNS", "SM_CELL_SEED", "SM_TASK", "SM_ROUND", "SM_SIBLING",
                                     "SM_SECRETS_FD"}
    own = {name for name, _ in sm_definitions(AGENT_CALL)}
    assert own == set(agent_call.NAMES), \
        "each contract name is spelled once, as a constant of eval/agent_call.py"
    bad = []
    for path in source_files():
        if path.suffix != ".py" or path == AGENT_CALL:
            continue
        rel = str(path.relative_to(ROOT))
        for name, line in sm_definitions(path):
            if rel not in OTHER_SM_HOMES.get(name, set()):
                bad.append(f"{rel}:{line} defines {name}")
    assert bad == [], "set the agent's SM_* variables through eval/agent_call.py (AgentCall, contract_env)"


def test_the_contract_finder_finds_each_way_of_defining_a_name(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text('import os\nA = "SM_STREAM"\nenv = {"SM_MODEL": "m"}\nenv["SM_ROUND"] = "1"\n'
                      'env.update(SM_SIBLING="0")\nenv.setdefault("SM_TASK", "meta")\n'
                      'os.environ.get("SM_SKILL_DIR")\nprefixes = ("SM_", "FAKE_")\n')
    assert sm_definitions(sample) == [("SM_STREAM", 2), ("SM_MODEL", 3), ("SM_ROUND", 4), ("SM_SIBLING", 5),
                                      ("SM_TASK", 6)]


def test_migrations_are_named_functions_never_a_positional_list():
    text = (ROOT / "mutator" / "store" / "migrations.py").read_text(encoding="utf-8")
    assert not re.search(r"^def _v\d+\(", text, re.M) and "MIGRATIONS" not in text
    db_text = (ROOT / "mutator" / "store" / "db.py").read_text(encoding="utf-8")
    assert not re.search(r"^def _v\d+\(", db_text, re.M)


# Files whose bytes are an identity: an agent backend's implementation id hashes its sources
# (eval/agents/__init__.py), a fake's or an --agent-cmd script's id hashes the script, and the bench's
# landscape id hashes its classes' source. Rewrapping them would move every evaluation key (old stores would
# re-run their cells), so they keep their lines until their code changes for a reason of its own.
HASHED = {"eval/agents/" + name for name in (
    "anthropic_agent.py", "caching.py", "claude_cli.py", "hide.py", "key_proxy.py", "loop.py", "meter.py",
    "result_json.py", "stream.py", "tools.py", "toolserver.py", "warm.py")} | {"fakes/" + name for name in (
    "escape_agent.py", "fake_agent.py", "fake_mutator.py", "noisy_agent.py", "trigger_agent.py",
    "trigger_mutator.py")} | {
    "bench/landscape.py"}


def test_no_source_line_past_110_columns():
    """Ruff's E501 at 110 for the source (tests/ are exempt in pyproject.toml, and so are the HASHED files,
    in both places): a size cap met by widening lines is not met."""
    wide = [f"{path.relative_to(ROOT)}:{n} ({len(line)})" for path in source_files() if path.suffix == ".py"
            and path.relative_to(ROOT).as_posix() not in HASHED
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if len(line) > 110]
    assert wide == [], f"{len(wide)} lines over 110 columns"


def test_the_hashed_files_are_exempt_from_e501_in_ruff_too():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert all(f'"{name}" = ["E501"]' in text for name in HASHED), "pyproject.toml must list every HASHED file"
