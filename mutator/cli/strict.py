"""argparse without prefix matching: `--budget` is never taken for `--budget-usd`, nor `--replicate` for
`--replicates`. An unknown flag is answered on stderr with the closest real one (exit 2); any other bad
input in one line naming it (the full usage is what --help is for).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn


def closest(word: str, candidates: Sequence[str]) -> str | None:
    """What a user most likely meant by `word`: a candidate it abbreviates, else the nearest spelling."""
    if prefixed := [candidate for candidate in candidates if candidate.startswith(word)]:
        return difflib.get_close_matches(word, prefixed, n=1, cutoff=0.0)[0]
    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def typed_flags(argv: Sequence[str]) -> list[str]:
    """The long flags in argv as typed (`--x=1` as `--x`), up to a bare `--`."""
    flags = []
    for word in argv:
        if word == "--":
            break
        if word.startswith("--") and len(word) > 2:
            flags.append(word.split("=", 1)[0])
    return flags


class Parser(argparse.ArgumentParser):
    """run.py's parser: no abbreviations, and an unknown flag named with its closest real one.

    `elsewhere` maps a flag this parser lacks to the commands that take it (a subcommand's parser), so
    `run.py plan --port 1` says where --port belongs instead of guessing a look-alike."""

    def __init__(self, *args, elsewhere: Mapping[str, Sequence[str]] | None = None, **kwargs) -> None:
        super().__init__(*args, allow_abbrev=False, **kwargs)
        self.elsewhere = dict(elsewhere or {})

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}; `{self.prog} --help` lists the flags\n")

    def parse_known_args(self, args=None, namespace=None):
        argv = sys.argv[1:] if args is None else list(args)
        for flag in typed_flags(argv):
            if flag not in self._option_string_actions:
                self.exit(2, f"error: {self.unknown(flag)} (`{self.prog} --help` lists the flags)\n")
        return super().parse_known_args(argv, namespace)

    def unknown(self, flag: str) -> str:
        """What to say about a flag this parser does not take."""
        if commands := self.elsewhere.get(flag):
            return f"{flag} is not a flag of `{self.prog}`; it goes with: {', '.join(commands)}"
        guess = closest(flag, [option for option in self._option_string_actions if option.startswith("--")])
        return f"unknown flag {flag}" + (f"; did you mean {guess}?" if guess else "")
