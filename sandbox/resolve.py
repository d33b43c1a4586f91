"""Where an agent command's programs really are, found on the host the way the user's shell would run them.

PATH, symlinks, version-manager shims (pyenv, rbenv, nodenv, asdf: `<manager> which NAME`; mise, volta) and
`#!` lines (`#!/usr/bin/env python3` included) are followed to the real binaries, and each one's installation
(e.g. pyenv's `versions/<v>/`, a venv and its base Python, nvm's `versions/node/<v>/`) is named so a sandbox
can mount it read-only. Describes only: it never mounts anything and never runs the program itself (a shim's
manager is asked `which`). A shim cannot run in a sandbox (its manager and its state are not mounted), so a
program reached through one is run by its real path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sandbox import SandboxError

# A pyenv/rbenv/nodenv/asdf shim ends in `exec "<manager>" exec "<program>" "$@"`; only these managers count
# (a wrapper's `exec docker exec ...` is no shim).
SHIM_EXEC = re.compile(r'^\s*exec\s+"?(?P<manager>[^"\s]+)"?\s+exec\s', re.MULTILINE)
SHIM_MANAGERS = ("pyenv", "rbenv", "nodenv", "goenv", "plenv", "jenv", "asdf")
SHIM_EXPORT = re.compile(r'^\s*export\s+(?P<name>[A-Z_]+)="(?P<value>[^"$`]*)"\s*$', re.MULTILINE)
# Shims that are symlinks to their manager's binary, which picks the tool by argv[0].
LINKED_SHIMS = {"mise": "mise", "rtx": "rtx", "volta-shim": "volta"}
# pyenv's family, when its manager cannot be asked: the version file and variable, and the versions folder.
VERSION_FILES = {"pyenv": ("PYENV", ".python-version"), "rbenv": ("RBENV", ".ruby-version"),
                 "nodenv": ("NODENV", ".node-version")}
MAX_DEPTH = 8   # the kernel follows at most 4 #! levels; shims and symlinks add a few more steps
FIX = "install it, or put the real program's full path in the command"


class ProgramError(SandboxError):
    """A program of an agent command cannot be found or cannot run; the message names it, the path it
    resolved to and the fix."""


@dataclass(frozen=True)
class Program:
    """One program as the host would run it: where PATH found it, what runs after shims (symlinks kept, so
    a venv's python stays the venv's), and its `#!` interpreter for a script."""
    given: str                     # as the command or a #! line names it
    path: Path                     # what runs: after PATH and shims, symlinks not followed
    steps: tuple[str, ...] = ()    # how it was found, for messages
    shimmed: bool = False          # reached through a version manager's shim
    interpreter: Program | None = None
    interpreter_args: tuple[str, ...] = ()
    via_env: bool = False          # named by `#!/usr/bin/env NAME`: looked up on PATH where it runs

    def chain(self) -> str:
        """`python3 → /root/.pyenv/shims/python3 (pyenv shim) → /root/.pyenv/versions/3.11.7/bin/python3`."""
        text = " → ".join([self.given, *self.steps])
        if self.interpreter is not None:
            text += f" (#! {self.interpreter.chain()})"
        return text

    def final(self) -> Program:
        """The binary at the end of the #! chain."""
        return self if self.interpreter is None else self.interpreter.final()

    def exec_argv(self) -> list[str]:
        """How to start it without a shim: a script whose interpreter came through a shim is run by that
        interpreter's real path, as the kernel would after the shim."""
        interpreter = self.interpreter
        if interpreter is not None and any(p.shimmed for p in interpreter.programs()):
            return [*interpreter.exec_argv(), *self.interpreter_args, str(self.path)]
        return [str(self.path)]

    def programs(self) -> list[Program]:
        """This program and its #! interpreters, outermost first."""
        return [self, *(self.interpreter.programs() if self.interpreter else [])]

    def path_dirs(self) -> list[Path]:
        """Folders to put first on PATH where it runs, so `env NAME` and the agent's own tools find what the
        host's shims pointed at rather than skipping the unmounted shims."""
        return [p.path.parent for p in self.programs() if p.shimmed]

    def installations(self, home: Path) -> list[Path]:
        """What must be readable for it to run: each step's installation, the real file behind each symlink,
        a venv's base Python, and its interpreters'."""
        found: list[Path] = []
        for program in self.programs():
            for exe in (program.path.absolute(), program.path.resolve()):
                found += installation(exe, home)
                found += venv_base(exe, home)
        return list(dict.fromkeys(found))


def installation(exe: Path, home: Path) -> list[Path]:
    """The installation an executable belongs to: <prefix>/bin/x -> <prefix> (pyenv's versions/<v>/ with its
    lib/), else its folder. `~/.local` gives only its bin/ and lib/; a prefix that is home or above it, only
    the file: a sandbox must never show the user's home."""
    folder = exe.parent
    prefix = folder.parent if folder.name in ("bin", "sbin") else folder
    if prefix == Path("/") or prefix == home or prefix in home.parents:
        return [exe]
    if prefix == home / ".local":
        return [p for p in (prefix / "bin", prefix / "lib") if p.is_dir()]
    return [prefix]


def venv_base(exe: Path, home: Path) -> list[Path]:
    """A venv's Python needs its base installation too: pyvenv.cfg's `home` is the base's bin folder."""
    cfg = exe.parent.parent / "pyvenv.cfg"
    if exe.parent.name != "bin" or not cfg.is_file():
        return []
    for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            base = Path(value.strip())
            return installation(base / "python3", home) + installation((base / "python3").resolve(), home)
    return []


def find_program(name: str, *, cwd: Path, environ: Mapping[str, str] | None = None,
                 depth: int = 0) -> Program:
    """The program `name` (a bare name looked up on PATH, or a path relative to `cwd`) as the host runs it."""
    environ = os.environ if environ is None else environ
    if depth > MAX_DEPTH:
        raise ProgramError(f"`{name}`: more than {MAX_DEPTH} shims, links or #! lines deep; {FIX}")
    if "/" in name:
        path = Path(name) if Path(name).is_absolute() else cwd / name
        if not path.exists():
            raise ProgramError(f"`{name}` does not exist (looked for {path.absolute()}); {FIX}")
        steps: tuple[str, ...] = () if path == Path(name) else (str(path.absolute()),)
    else:
        where = shutil.which(name, path=environ.get("PATH", ""))
        if where is None:
            raise ProgramError(f"`{name}` is not on PATH ({environ.get('PATH', '')}); {FIX}")
        path, steps = Path(where), (where,)
    path = path.absolute()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ProgramError(f"`{name}` ({path}) is not an executable file; `chmod +x {path}`, or run it with "
                           f"its interpreter (e.g. `python3 {path}`)")
    shim = _through_shim(name, path, environ, depth)
    if shim is not None:
        return Program(given=name, path=shim.path, steps=(*steps, *shim.steps), shimmed=True,
                       interpreter=shim.interpreter, interpreter_args=shim.interpreter_args)
    interpreter, args, via_env = _shebang(path, cwd=cwd, environ=environ, depth=depth)
    if path.is_symlink():
        steps = (*steps, f"{path.resolve()} (symlink)")
    return Program(given=name, path=path, steps=steps, interpreter=interpreter, interpreter_args=args,
                   via_env=via_env)


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(4096)
    except OSError:
        return b""


def _through_shim(name: str, path: Path, environ: Mapping[str, str], depth: int) -> Program | None:
    """What a version manager's shim runs (None when `path` is no shim): ask the manager, else follow
    its layout, else say what failed."""
    tool = path.name
    target = path.resolve()
    if path.is_symlink() and target.name in LINKED_SHIMS and tool != target.name:
        manager, exports = str(target.parent / LINKED_SHIMS[target.name]), {}
    else:
        head = _head(path)
        match = SHIM_EXEC.search(head.decode("utf-8", "replace")) if head.startswith(b"#!") else None
        if match is None or Path(match["manager"]).name not in SHIM_MANAGERS:
            return None
        manager = match["manager"]
        exports = {m["name"]: m["value"] for m in SHIM_EXPORT.finditer(head.decode("utf-8", "replace"))}
    kind = Path(manager).name
    env = {**environ, **exports}
    real, why = _ask_manager(manager, tool, tuple(sorted(env.items())), str(Path.cwd()))
    if real is None:
        real = _layout(kind, tool, path, env)
    if real is None:
        raise ProgramError(f"`{name}` is a {kind} shim ({path}) and `{kind} which {tool}` failed: {why}; "
                           f"install the version it selects (`{kind} install`), or put the interpreter's "
                           "full path in the command")
    inner = find_program(str(real), cwd=Path("/"), environ=environ, depth=depth + 1)
    return Program(given=name, path=inner.path, steps=(f"{real} (`{kind} which {tool}`)", *inner.steps),
                   interpreter=inner.interpreter, interpreter_args=inner.interpreter_args)


@lru_cache(maxsize=64)
def _ask_manager(manager: str, tool: str, env: tuple[tuple[str, str], ...],
                 cwd: str) -> tuple[Path | None, str]:
    """`<manager> which <tool>` in the user's cwd (a local version file counts): (its answer, why not)."""
    try:
        done = subprocess.run([manager, "which", tool], capture_output=True, text=True, timeout=30, cwd=cwd,
                              env=dict(env), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, str(err)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None, (done.stderr.strip() or f"exit {done.returncode}").replace("\n", " ")
    answer = Path(lines[-1].strip())
    if not (answer.is_absolute() and answer.is_file()):
        return None, f"it answered {lines[-1].strip()!r}, not a file"
    return answer, ""


def _layout(kind: str, tool: str, shim: Path, env: Mapping[str, str]) -> Path | None:
    """pyenv's family without its manager: `<ROOT>/versions/<v>/bin/<tool>` for the version the shell would
    pick (the variable, a version file up from the cwd, then the global one)."""
    if kind not in VERSION_FILES:
        return None
    prefix, filename = VERSION_FILES[kind]
    root = Path(env.get(f"{prefix}_ROOT") or shim.parent.parent)
    chosen = env.get(f"{prefix}_VERSION", "")
    if not chosen:
        for folder in (Path.cwd(), *Path.cwd().parents, root):
            file = folder / (filename if folder != root else "version")
            if file.is_file():
                chosen = file.read_text(encoding="utf-8", errors="replace")
                break
    for version in re.split(r"[\s:]+", chosen):
        candidate = root / "versions" / version / "bin" / tool
        if version and candidate.is_file():
            return candidate
    return None


def _shebang(path: Path, *, cwd: Path, environ: Mapping[str, str],
             depth: int) -> tuple[Program | None, tuple[str, ...], bool]:
    """A script's interpreter from its #! line (`env NAME` looked up on PATH), its arguments, and whether it
    came through env."""
    head = _head(path)
    if not head.startswith(b"#!"):
        return None, (), False
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        raise ProgramError(f"{path}: its #! line names no interpreter; write e.g. `#!/usr/bin/env python3`")
    if Path(words[0]).name != "env":
        interpreter = find_program(words[0], cwd=cwd, environ=environ, depth=depth + 1)
        return interpreter, (" ".join(words[1:]),) if words[1:] else (), False
    rest = [w for w in words[1:] if w not in ("-S", "--split-string") and "=" not in w]
    if not rest or rest[0].startswith("-"):
        raise ProgramError(f"{path}: cannot read its #! line {' '.join(words)!r}; write e.g. `#!/usr/bin/env "
                           f"python3`")
    interpreter = find_program(rest[0], cwd=cwd, environ=environ, depth=depth + 1)
    return interpreter, tuple(rest[1:]), True


@dataclass(frozen=True)
class Command:
    """An agent command resolved for a sandbox: what to run in it, and what it must be able to read."""
    argv: tuple[str, ...]                 # argv[0] replaced by the program's real path (never a shim)
    program: Program                      # argv[0]
    # the first file argument (`python3 agent.py`): its folder is mounted
    script: Path | None = None
    files: tuple[Path, ...] = ()          # other file arguments, mounted alone (`--config /project/x.json`)
    # executable arguments the command runs itself (claude_cli's --claude)
    tools: tuple[Program, ...] = ()

    def programs(self) -> list[Program]:
        return [self.program, *self.tools]

    def path_dirs(self) -> list[Path]:
        return list(dict.fromkeys(d for p in self.programs() for d in p.path_dirs()))

    def mounts(self, writable: tuple[Path, ...] = ()) -> list[Path]:
        """Everything to mount read-only. A folder holding a writable path (the data dir's parent) is never
        bound whole: the file alone instead. Keep agent scripts in a folder holding nothing secret."""
        home = Path(os.path.expanduser("~")).absolute()
        paths: list[Path] = []
        for program in self.programs():
            for path in program.installations(home):
                paths.append(path if path.is_file() or not _holds(path, writable)
                             else program.path.absolute())
        if self.script is not None:
            paths.append(self.script.parent if not _holds(self.script.parent, writable) else self.script)
        return list(dict.fromkeys([*paths, *self.files]))


def _holds(folder: Path, writable: tuple[Path, ...]) -> bool:
    return any(folder == w or folder in w.parents for w in writable)


def _is_program_file(path: Path) -> bool:
    """An executable that is a program (ELF or #!), not a data file that merely has the x bit (vfat, WSL)."""
    return os.access(path, os.X_OK) and _head(path).startswith((b"\x7fELF", b"#!"))


def resolve_command(argv: tuple[str, ...] | list[str], *, cwd: Path,
                    environ: Mapping[str, str] | None = None) -> Command:
    """argv[0] through PATH, shims, symlinks and #! lines; its file arguments (the first, its script, by
    folder; the others alone; an executable one, such as the claude CLI our claude-cli
    backend runs, as a program)."""
    if not argv:
        raise ProgramError("an empty agent command; give a program and its arguments")
    program = find_program(argv[0], cwd=cwd, environ=environ)
    script: Path | None = None
    files: list[Path] = []
    tools: list[Program] = []
    for arg in argv[1:]:
        candidate = Path(arg) if Path(arg).is_absolute() else cwd / arg
        if arg.startswith("-") or not candidate.is_file():
            continue
        candidate = candidate.absolute()
        if script is None:
            script = candidate
        elif _is_program_file(candidate):
            tools.append(find_program(str(candidate), cwd=cwd, environ=environ))
        else:
            files.append(candidate)
    return Command(argv=(*program.exec_argv(), *argv[1:]), program=program, script=script, files=tuple(files),
                   tools=tuple(tools))
