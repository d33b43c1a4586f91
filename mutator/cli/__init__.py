"""The command line: run.py's flags (flags), its subcommands (subcommands, parse; strict: no abbreviations, an
unknown flag named with the closest one), the agents a command runs (agents), one function per mode (commands)
and the registry that picks one and maps every stop to an exit code (main).

May import: every other room of `mutator/` (it is the top), `eval/`, `strategies/`, `sandbox/`.
Nothing imports it but run.py.
"""
