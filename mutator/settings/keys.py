"""How a setting is declared, once: a `Key` (its config.json path, rule, default, flag and help) in the
metadata of a record's field, and the walk that lists every Key of a record, nested records included, in
field order. Never loads or checks a value (mutator/config.py does)."""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ENV_PREFIX = "SKILL_MUTATOR_"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Every integer setting is stored (runs, seeds, proposals): SQLite's INTEGER is 64-bit, signed
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
INT_RANGE = f"between {INT_MIN} and {INT_MAX} (a 64-bit integer)"


def in_int_range(value: int) -> bool:
    return INT_MIN <= value <= INT_MAX


def integer(text: str) -> int:
    """argparse's type for every integer flag: an integer in the 64-bit range (argparse then exits 2 naming
    the flag), never a number the store cannot hold."""
    import argparse
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not in_int_range(value):
        raise argparse.ArgumentTypeError(f"{text} is out of range: give an integer {INT_RANGE}")
    return value


@dataclass(frozen=True)
class Key:
    """One setting, written once: its config.json name, its rule, its default, and its flag's help (if any).

    Its flat name `attr` (also the flag's dest and the SKILL_MUTATOR_<ATTR> variable) is the declaring field's
    name unless the declaration names it; `section` and `name` say where its value sits in Settings
    (`settings.<section>.<name>`, or `settings.<name>` when section is ''); its type comes from the field.
    `mutator/cli/flags.py` makes the flag from it."""
    path: str                      # dotted key in config.json, e.g. "score.gateZ"
    check: Callable[[Any], bool] = lambda value: True
    rule: str = ""
    default: Any = None            # used when config.json lacks the key (a key added after it was written)
    help: str | None = None        # the flag's help: None = no flag (config or environment only)
    group: str = ""                # the --help group its flag is listed in (flags.py), in field order there
    flag: Mapping[str, Any] = field(default_factory=dict)   # argparse extras: choices, metavar, action
    attr: str = ""                 # the flat name, unique among all keys (the field's unless declared)
    kind: Any = None               # str | int | float | bool | dict | list | Path, from the field's type
    section: str = ""              # the Settings field of the record holding it ('' = Settings itself)
    name: str = ""                 # its field in that record

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.attr.upper()

    @property
    def option(self) -> str:
        return "--" + self.attr.replace("_", "-")


def key(path: str, check: Callable[[Any], bool] = lambda value: True, rule: str = "", default: Any = None, *,
        help: str | None = None, group: str = "", flag: Mapping[str, Any] | None = None, repr: bool = True,
        attr: str = "") -> Any:
    """A record's field that is a configuration key (see Key); `attr` when its flat name is not the field's
    name."""
    declared = Key(path, check, rule, default, help, group, flag or {}, attr)
    return field(repr=repr, metadata={"key": declared})


def section() -> Any:
    """A Settings field holding a record of keys (e.g. `score`): its keys are listed where it stands."""
    return field(metadata={"section": True})


class Record:
    """A record of keys. Never true or false: `if settings.sequential:` on a record is a bug (the flat
    `sequential` was a bool; its value is `settings.sequential.waves`), so it fails loudly."""

    def __bool__(self) -> bool:
        raise TypeError(f"{type(self).__name__} is a record of settings, not a truth value; "
                        f"read one of its fields")


def keys_of(record: type, section_name: str = "") -> tuple[Key, ...]:
    """Every Key declared by `record` and its sections, in field order (a section's keys where it stands)."""
    hints = typing.get_type_hints(record)
    found: list[Key] = []
    for f in dataclasses.fields(record):
        if "section" in f.metadata:
            found.extend(keys_of(hints[f.name], f.name))
        elif "key" in f.metadata:
            declared: Key = f.metadata["key"]
            kind = typing.get_origin(hints[f.name]) or hints[f.name]
            found.append(dataclasses.replace(declared, attr=declared.attr or f.name, kind=kind,
                                             section=section_name, name=f.name))
    return tuple(found)


def build(record: type, values: Mapping[str, Any], **extra: Any) -> Any:
    """`record` made from values keyed by flat name (`attr`), its sections made the same way."""
    hints = typing.get_type_hints(record)
    made: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        if "section" in f.metadata:
            made[f.name] = build(hints[f.name], values)
        elif "key" in f.metadata:
            made[f.name] = values[f.metadata["key"].attr or f.name]
    return record(**made, **extra)


def at_least_zero(value: Any) -> bool:
    return value >= 0


def positive(value: Any) -> bool:
    return value > 0


def resources(value: Any) -> bool:
    return all(isinstance(k, str) and k and isinstance(v, (int, float)) and not isinstance(v, bool)
               and math.isfinite(v) and v >= 0 for k, v in value.items())


def ray_address(value: Any) -> bool:
    from eval.executors.ray_link import address_problem
    return address_problem(value) is None


def env_names(value: Any) -> bool:
    return all(isinstance(n, str) and ENV_NAME.match(n) for n in value)
