"""From argv to the flags' namespace: `run.py COMMAND ...` through that subcommand's own parser, anything
else through the one flat parser (every old mode flag: `--plan`, `--test-run RUN`, ...). Both give the same
namespace, so a subcommand and its old spelling run the same code and print the same output.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mutator.cli.flags import parser
from mutator.cli.strict import Parser, closest
from mutator.cli.subcommands import BY_NAME, SUBCOMMANDS, Subcommand, commands_epilog

FIRST_GROUP = 2   # argparse's own two groups (positionals, options) come first


def flag_of(action: argparse.Action) -> str:
    return next(option for option in action.option_strings if option.startswith("--"))


def elsewhere(flat: argparse.ArgumentParser, command: Subcommand) -> dict[str, list[str]]:
    """Every flat flag `command` does not take, with the subcommands that take it (or that it stands for)."""
    takers: dict[str, list[str]] = {}
    for action in flat._actions:
        if not action.option_strings or action.dest in command.flags or action.dest == "help":
            continue
        takers[flag_of(action)] = [other.name for other in SUBCOMMANDS
                                   if action.dest in other.flags or action.dest == other.mode]
    return {flag: names for flag, names in takers.items() if names}


def subparser(command: Subcommand) -> Parser:
    """`run.py COMMAND`'s parser: its arguments, then the flat parser's flags it takes, in their groups."""
    flat = parser()
    usage = " ".join(("%(prog)s", *command.args, "[flags]" if command.flags else ""))
    p = Parser(prog=f"run.py {command.name}", usage=usage.strip(), description=command.help,
               elsewhere=elsewhere(flat, command))
    mode = next((action for action in flat._actions if action.dest == command.mode), None)
    helps = (mode.help, *command.arg_help) if command.args else ()
    for index, (metavar, help) in enumerate(zip(command.args, helps, strict=True)):
        p.add_argument(f"arg{index}", metavar=metavar, type=mode.type, help=help)
    for group in flat._action_groups[FIRST_GROUP:]:
        kept = [action for action in group._group_actions if action.dest in command.flags]
        if kept:
            own = p.add_argument_group(group.title)
            for action in kept:
                own._add_action(action)
    return p


def parse_command(command: Subcommand, argv: Sequence[str]) -> argparse.Namespace:
    """The namespace the flat parser gives for the subcommand's old spelling."""
    p = subparser(command)
    given = p.parse_args(argv)
    args = parser().parse_args([])
    values = [given.__dict__.pop(f"arg{index}") for index in range(len(command.args))]
    vars(args).update(vars(given))
    if command.mode:
        setattr(args, command.mode, True if not values else values[0] if len(values) == 1 else values)
    return args


def flat_parser() -> argparse.ArgumentParser:
    """The flat parser, its --help also listing the subcommands."""
    p = parser()
    p.epilog = f"{p.epilog}\n\n{commands_epilog()}"
    return p


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """run.py's flags: a subcommand first, else the old flat form (no subcommand, no mode flag: the loop)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in BY_NAME:
        return parse_command(BY_NAME[argv[0]], argv[1:])
    if argv and not argv[0].startswith("-"):
        guess = closest(argv[0], list(BY_NAME))
        hint = f"; did you mean {guess}?" if guess else ""
        parser().exit(2, f"error: unknown command {argv[0]}{hint} (`run.py --help` lists the commands)\n")
    return flat_parser().parse_args(argv)
