"""Checks of the user's inputs that must pass before anything is written to the data dir or spent.

Each raises ConfigError with one line naming the problem and the fix; run.py turns it into exit 2.
Pure checks of files and flags: never opens the store, never starts an agent.
"""

from __future__ import annotations

import math
from pathlib import Path

from eval.suite import Suite
from mutator.config import ConfigError

ROLES = {"--suite": "train", "--val": "val", "--holdout": "test", "--test-run --suite": "test",
         "--compare --suite": "test"}


def check_seed_skill(skill_dir: Path) -> None:
    """The seed must be a valid Agent Skill (skills-ref), or every candidate would fail the critic after the
    seed was paid for; a skill set (skills/<name>/SKILL.md..., eval/skill_set.py) is checked member by
    member, and its folder name names the set."""
    from skills_ref import validate

    from eval.skill_set import members
    from eval.suite import name_problem
    if parts := members(skill_dir):
        if problem := name_problem(skill_dir.name):
            raise ConfigError(f"seed skill set {skill_dir}: its folder name names the set and is invalid: "
                              f"{problem}; rename it")
        for member in parts:
            check_seed_skill(member)
        return
    if not (skill_dir / "SKILL.md").is_file():
        raise ConfigError(f"seed skill {skill_dir}: no SKILL.md; pass --skill-dir pointing at a skill folder "
                          f"(SKILL.md with name/description frontmatter), or a skill set (a folder whose "
                          f"skills/ holds skill folders)")
    from mutator.critic.text import utf8_problem
    if problem := utf8_problem(skill_dir / "SKILL.md"):
        raise ConfigError(f"seed skill {problem}")
    problems = validate(skill_dir)
    if problems:
        raise ConfigError(f"seed skill {skill_dir / 'SKILL.md'}: {'; '.join(problems)}; fix the frontmatter "
                          f"(name = folder name, lowercase letters, digits and hyphens; a description)")


def check_other_skills(settings) -> None:
    """--with-skills DIR: its skills are checked before the store is opened (eval/other_skills.py)."""
    if settings.with_skills:
        from mutator.round.session import genome_name, other_skills
        other_skills(settings, genome_name(settings.skill_dir))


def check_split(suite: Suite, flag: str, *, allow_mismatch: bool) -> None:
    """A suite's own `split:` must match the role it is used in (a val suite as train leaks it to the
    mutator)."""
    role = ROLES[flag]
    if suite.split != role and not allow_mismatch:
        wanted = "test suite held out from the run" if role == "test" else f"{role} suite"
        raise ConfigError(f"{flag} {suite.name}: its suite.md says split: {suite.split}, but {flag} uses it "
                          f"as {role}; pick a {wanted}, or pass --allow-split-mismatch if this is deliberate")


def check_agent_flags(*, real: bool, agent: str | None, agent_cmd: str | None,
                      mutator_agent: str | None) -> None:
    """Backend flags choose real agents; without --real they would be silently ignored for the fakes."""
    if real:
        return
    named = [flag for flag, value in (("--agent-cmd", agent_cmd), ("--agent", agent),
                                      ("--mutator-agent", mutator_agent)) if value is not None]
    if named:
        raise ConfigError(f"{', '.join(named)} without --real: a dry run always uses the fake agents; add "
                          f"--real to run real agents (they spend money), or drop {named[0]}")


def check_finite(**flags: float | None) -> None:
    """argparse's float() takes 'nan' and 'inf'; no number flag means anything with them."""
    for name, value in flags.items():
        if value is not None and not math.isfinite(value):
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag} must be a finite number, got {value!r}; pass a number such as {flag} "
                              f"1")


def check_executor(executor: str, *, ray_address: str = "", ray_timeout_typed: bool = False) -> None:
    """--executor ray needs the optional ray package, and the Ray flags need --executor ray (they would be
    silently ignored): say so before the run is opened, not at its first cell."""
    import importlib.util
    if executor == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError("--executor ray needs the ray package, which is not installed; pip install -e "
                          "'.[ray]' (on this machine and every worker), or use --executor local")
    stray = [flag for flag, given in ((f"--ray-address {ray_address}", ray_address),
                                      ("--ray-timeout-s", ray_timeout_typed)) if given]
    if executor != "ray" and stray:
        raise ConfigError(f"{' and '.join(stray)} only work(s) with --executor ray, but the executor is "
                          f"{executor}; add --executor ray, or drop {stray[0].split()[0]} (config.json "
                          f"rayAddress / SKILL_MUTATOR_RAY_ADDRESS count too)")


DEMO_SKILL = Path(__file__).resolve().parents[2] / "suites" / "csv-clean"
DEMO_SUITES = {"clean-train", "clean-val", "clean-test", "clean-val-expect"}   # config.json's demo suites


def check_skill_dir_given(given: Path | None, skill_dir: Path, suites: list[Suite]) -> None:
    """Without --skill-dir the config's skillDir is used; when that is the project's demo skill and a suite is
    not the demo's (by folder name, so a cut copy of a demo suite counts), the user forgot the flag: evolving
    the demo CSV skill on their suites would spend for nothing."""
    if given is not None or skill_dir.resolve() != DEMO_SKILL:
        return
    theirs = [suite for suite in suites if suite.path.resolve().name not in DEMO_SUITES]
    if theirs:
        names = "/".join(suite.name for suite in suites)
        raise ConfigError(f"no --skill-dir given: the demo skill suites/csv-clean would be evolved on your "
                          f"suites {names}; pass --skill-dir PATH/TO/YOUR/SKILL")


def check_out_folder(flag: str, out: Path, *, skill_dir: Path | None, data_dir: Path) -> None:
    """A command that writes suites into `out` must not write into an existing suite (it would change that
    suite on disk under every run of it), the skill or the data dir; a new folder beside the suites
    (suites/NAME) is fine."""
    out = out.resolve()
    for place in (out, *out.parents):
        if (place / "suite.md").is_file():
            raise ConfigError(f"{flag} {out}: inside the suite {place} (it has a suite.md); writing there "
                              f"would change that suite on disk; pick a new folder such as "
                              f"{place.parent / 'mined'}")
    for what, where in (("the skill", skill_dir), ("the data dir", data_dir)):
        if where is None:
            continue
        where = where.resolve()
        if out == where or out.is_relative_to(where):
            raise ConfigError(f"{flag} {out}: inside {what} {where}; pick a folder outside it, such as "
                              f"suites/NAME")
