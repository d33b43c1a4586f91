"""The agents a command runs: the real backends (checked before any spend) or the zero-spend fakes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eval.cost import PricingError
from mutator.config import ROOT, ConfigError, Settings


def real_agents(settings: Settings, args: argparse.Namespace, *, build_only: bool = False,
                check: bool = True):
    """The real backends, checked before any spend (the prices: check_prices): API key / CLI / command
    present.
    `build_only`: the command runs no mutator (--check, --test-run, --compare, --aa), so none is asked for;
    `check=False`: it runs no agent at all (--plan), so no key, CLI or command is demanded."""
    import os

    from eval.agents import AgentSetupError
    from eval.agents.choice import backend_for, choose
    from mutator.round.session import Agents
    try:
        # a typed --mutator-agent other than command outranks config mutatorCmd (flags win over config)
        configured = settings.mutator_cmd if args.mutator_agent in (None, "command") else ""
        source = "--mutator-cmd" if args.mutator_cmd else f"config mutatorCmd ({settings.config_file})"
        build_choice, mutator_choice = choose(
            agent=args.agent, agent_cmd=args.agent_cmd, mutator_agent=args.mutator_agent,
            mutator_cmd=args.mutator_cmd or configured or None, mutator_cmd_source=source)
        build = backend_for(build_choice, config_file=settings.config_file, environ=os.environ, check=check)
        mutator = build if build_only else backend_for(mutator_choice, config_file=settings.config_file,
                                                       environ=os.environ, check=check)
    except AgentSetupError as err:
        raise ConfigError(str(err)) from None
    # the solve phase runs the mutator's backend as a build agent with the mutator model: only ours can
    solver = mutator if mutator_choice.can_solve else None
    return Agents(build_argv=build.argv("build"), build_id=build.implementation("build"),
                  mutator_argv=mutator.argv("mutator"), mutator_id=mutator.implementation("mutator"),
                  network=True,
                  solve_argv=solver.argv("build") if solver else None,
                  solve_id=solver.implementation("build") if solver else "",
                  mutator_how=mutator_choice.how,
                  launch={"real": True, "agent": build_choice.backend, "agent_cmd": build_choice.command,
                          "mutator_agent": mutator_choice.backend, "mutator_cmd": mutator_choice.command})


def check_prices(settings: Settings, args: argparse.Namespace) -> None:
    """Every eval model and the mutator model has a price, before the first cell of any of them runs (a dry
    run too: its cells are priced as a real run's would be)."""
    from eval.cost import price_for
    for model, attr, key in (*((m, "model", "model") for m in settings.models),   # every eval model is priced
                             (settings.mutator_model, "mutator_model", "mutatorModel")):
        flag = "--" + attr.replace("_", "-")
        try:
            price_for(settings.pricing, model)  # PricingError names the model and the config key to add
        except PricingError as err:
            how = (f"{flag} {getattr(args, attr)}" if getattr(args, attr) else
                   f"the {key} {model!r} from {settings.config_file} or SKILL_MUTATOR_{attr.upper()} "
                   f"(pass {flag} to choose another)")
            raise PricingError(f"{how}: {err}") from None


DRY_RUN = ("dry run (fake agents): nothing is spent. The fakes know only the demo's CSV rules (a skill's "
           "rules.json, fakes/csv_rules.py); on another skill's suites they check that its suites, graders "
           "and flags work, not how good the skill is. Add --real for real agents")


NOISY = ("; --fake-noise realistic: the fake build agent passes or fails each cell as a real agent might "
         "(per-task success from SkillsBench's fitted prior, the skill's rules shifting it), so verdicts are "
         "as noisy as a real run's")


def fake_agents(skill_dir: Path | None = None, noise: str = "off"):
    """The zero-spend fakes; a skill-set seed gets fakes/set_mutator.py (fake_mutator.py's change, made to one
    skill of the set), a one-skill seed fake_mutator.py as always (so its dry runs keep their ids).
    `noise` realistic (--fake-noise): the build cells run fakes/noisy_agent.py, its fitted parameters on its
    command line and in its id; off, every argv and id is as it always was."""
    from eval.skill_set import is_skill_set
    from mutator.round.session import Agents
    from mutator.validity.fake_ids import fake_builder, fake_id

    build, mutator = ROOT / "fakes" / "fake_agent.py", ROOT / "fakes" / "fake_mutator.py"
    if skill_dir is not None and is_skill_set(skill_dir):
        mutator = ROOT / "fakes" / "set_mutator.py"
    # -S: the fakes use the standard library only, so each skips site's import of every installed .pth (~30 ms
    # of a fake cell's start here); their ids hash the scripts, never the argv, so no store's keys move
    python = (sys.executable, "-S")
    builder, tail = fake_builder(noise)   # the solve phase (a strong model solving bare) stays noiseless
    return Agents(build_argv=(*python, str(builder), *tail), build_id=fake_id(builder, tail),
                  mutator_argv=(*python, str(mutator)), mutator_id=fake_id(mutator),
                  solve_argv=(*python, str(build)), solve_id=fake_id(build),
                  launch={"real": False, **({"fake_noise": noise} if noise != "off" else {})})


def named_suites(settings: Settings, args: argparse.Namespace) -> list:
    """The suites the command names (--suite, --val, --holdout) that load; one that does not is the command's
    to report, in its own words."""
    from eval.suite import SuiteError, load_suite
    from mutator.config import resolve_suite_path
    suites = []
    for name in (args.suite, args.val, args.holdout):
        if name:
            try:
                suites.append(load_suite(resolve_suite_path(settings, name)))
            except (SuiteError, ConfigError, OSError):
                continue
    return suites


def preflight_agents(agents, launcher, *, build_only: bool = False, suites=()) -> None:
    """Run each real agent's resolved programs once inside the chosen sandbox (sandbox/probe.py), before any
    cell or mutator call is paid: a program that resolves here but cannot start there is named (ProgramError,
    exit 2). The build agent of a Harbor suite's cells is probed in each task's container too (--sandbox
    podman|docker)."""
    from eval.graders.harbor_runner import preflight as in_containers
    from sandbox.probe import probe
    launch = agents.launch
    if launch.get("agent_cmd"):
        build = f"--agent-cmd {launch['agent_cmd']}"
    else:
        build = f"--agent {launch.get('agent')}"
    checks = [(agents.build_argv, f"the build agent ({build})")]
    if not build_only:   # the solve phase runs the mutator's own backend (the same programs)
        checks += [(agents.mutator_argv, f"the mutator ({agents.mutator_how})")]
    seen: set[tuple[str, ...]] = set()
    for argv, what in checks:
        if tuple(argv) not in seen:
            seen.add(tuple(argv))
            probe(launcher, argv, what=what)
    in_containers(launcher, suites, agents.build_argv, what=checks[0][1])
