"""The anthropic agent's tools, scoped to its working dir: bash (with a timeout), read, write, edit, list.

A path that resolves outside the working dir (`..`, an absolute path, a symlink) is refused, and so
is any write the role's write rule does not allow. A bad call is an error *result* the model sees,
never an exception that ends the agent.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_OUTPUT_CHARS = 30_000
MAX_LIST_ENTRIES = 500
BASH_TIMEOUT_S = 120
BASH_MAX_TIMEOUT_S = 600


# The model API and secret-looking variables stay with the agent process: a tool call's `env` shows no key.
# (The same rule as eval/environment.tool_env, kept here because under bwrap only this folder is mounted.)
MODEL_API = {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"}
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def tool_env() -> dict[str, str]:
    passed = set(re.split(r"[,\s]+", os.environ.get("SM_PASS_ENV", "")))
    return {name: value for name, value in os.environ.items()
            if name not in MODEL_API and not (SECRET_NAME.search(name) and name not in passed)}


class ToolError(Exception):
    """The call cannot be done as asked; the message is shown to the model."""


def _string(name: str, *, description: str) -> dict:
    return {name: {"type": "string", "description": description}}


SCHEMAS: dict[str, dict] = {
    "bash": {
        "description": "Run a shell command (bash -c) in the working directory and return its exit code, "
                       "stdout and stderr. Killed after `timeout` seconds (default 120, at most 600).",
        "input_schema": {"type": "object", "required": ["command"], "properties": {
            **_string("command", description="the command line"),
            "timeout": {"type": "integer", "description": "seconds before the command is killed"}}},
    },
    "read": {
        "description": "Read a text file. Paths are relative to the working directory.",
        "input_schema": {"type": "object", "required": ["path"], "properties": {
            **_string("path", description="file to read"),
            "offset": {"type": "integer", "description": "first line to return (1-based)"},
            "limit": {"type": "integer", "description": "how many lines to return"}}},
    },
    "write": {
        "description": "Create or overwrite a text file with the given content (parent folders are created).",
        "input_schema": {"type": "object", "required": ["path", "content"], "properties": {
            **_string("path", description="file to write"), **_string("content", description="the full text")}},
    },
    "edit": {
        "description": "Replace `old_string` with `new_string` in a file. `old_string` must occur exactly "
                       "once unless `replace_all` is true.",
        "input_schema": {"type": "object", "required": ["path", "old_string", "new_string"], "properties": {
            **_string("path", description="file to edit"), **_string("old_string", description="text to find"),
            **_string("new_string", description="replacement text"),
            "replace_all": {"type": "boolean", "description": "replace every occurrence"}}},
    },
    "list": {
        "description": "List the files under a folder (recursively, hidden folders included).",
        "input_schema": {"type": "object", "properties": {**_string("path", description="folder (default .)")}},
    },
}


def _clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n… [{len(text) - MAX_OUTPUT_CHARS} more characters cut]"


@dataclass(frozen=True)
class Toolbox:
    root: Path                                   # the working dir; every path resolves inside it
    may_write: Callable[[PurePosixPath], bool]   # relative path -> allowed?
    write_rule: str                              # says the rule in the refusal message
    bash: bool = True

    @property
    def names(self) -> list[str]:
        return [name for name in SCHEMAS if self.bash or name != "bash"]

    def schemas(self) -> list[dict]:
        return [{"name": name, **SCHEMAS[name]} for name in self.names]

    def run(self, name: str, args: object) -> str:
        """The tool's text output; ToolError for anything the model should fix and retry."""
        if name not in self.names:
            raise ToolError(f"unknown tool {name!r}; the tools are: {', '.join(self.names)}")
        if not isinstance(args, dict):
            raise ToolError(f"{name}: input must be a JSON object, got {type(args).__name__}")
        schema = SCHEMAS[name]["input_schema"]
        for key in schema.get("required", []):
            if key not in args:
                raise ToolError(f"{name}: missing required field {key!r}")
        for key, value in args.items():
            spec = schema["properties"].get(key)
            if spec is None:
                raise ToolError(f"{name}: unknown field {key!r}; fields: {', '.join(schema['properties'])}")
            expected = {"string": str, "integer": int, "boolean": bool}[spec["type"]]
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise ToolError(f"{name}: field {key!r} must be a {spec['type']}, got {value!r}"[:300])
        return getattr(self, f"_{name}")(**args)

    # ---- paths -------------------------------------------------------------------------------------
    def resolve(self, raw: str) -> tuple[Path, PurePosixPath]:
        root = self.root.resolve()
        path = (root / raw).resolve() if raw else root
        try:
            rel = path.relative_to(root)
        except ValueError:
            raise ToolError(f"{raw!r} is outside the working directory; use a path inside it") from None
        return path, PurePosixPath(rel.as_posix())

    def _writable(self, raw: str) -> Path:
        path, rel = self.resolve(raw)
        if not self.may_write(rel):
            raise ToolError(f"refused: writing {rel} is not allowed ({self.write_rule})")
        return path

    # ---- tools -------------------------------------------------------------------------------------
    def _bash(self, command: str, timeout: int = BASH_TIMEOUT_S) -> str:
        timeout = max(1, min(timeout, BASH_MAX_TIMEOUT_S))
        proc = subprocess.Popen(["bash", "-c", command], cwd=self.root, stdin=subprocess.DEVNULL, env=tool_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise ToolError(f"command killed after {timeout} s; output so far:\n"
                            + _clip(out.decode("utf-8", "replace") + err.decode("utf-8", "replace"))) from None
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # background children must not outlive the call
            except (ProcessLookupError, PermissionError):
                pass
        text = f"exit code {proc.returncode}\n"
        if out:
            text += f"stdout:\n{out.decode('utf-8', 'replace')}\n"
        if err:
            text += f"stderr:\n{err.decode('utf-8', 'replace')}\n"
        return _clip(text)

    def _read(self, path: str, offset: int = 1, limit: int = 0) -> str:
        target, rel = self.resolve(path)
        if target.is_dir():
            raise ToolError(f"{rel} is a folder; use list")
        try:
            text = target.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise ToolError(f"{rel}: no such file") from None
        except OSError as err:
            raise ToolError(f"{rel}: {err.strerror}") from None
        if offset > 1 or limit > 0:
            lines = text.splitlines(keepends=True)
            start = max(offset, 1) - 1
            text = "".join(lines[start:start + limit] if limit > 0 else lines[start:])
        return _clip(text) if text else "(empty file)"

    def _write(self, path: str, content: str) -> str:
        target = self._writable(path)
        if target.is_dir():
            raise ToolError(f"{path} is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode('utf-8'))} bytes to {self.resolve(path)[1]}"

    def _edit(self, path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        target = self._writable(path)
        try:
            text = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ToolError(f"{path}: no such file; use write to create it") from None
        count = text.count(old_string) if old_string else 0
        if count == 0:
            raise ToolError(f"{path}: old_string not found; read the file and copy the text exactly")
        if count > 1 and not replace_all:
            raise ToolError(f"{path}: old_string occurs {count} times; add context or set replace_all")
        target.write_text(text.replace(old_string, new_string) if replace_all
                          else text.replace(old_string, new_string, 1), encoding="utf-8")
        return f"replaced {count if replace_all else 1} occurrence(s) in {self.resolve(path)[1]}"

    def _list(self, path: str = ".") -> str:
        target, rel = self.resolve(path)
        if not target.is_dir():
            raise ToolError(f"{rel}: not a folder")
        entries = []
        for item in sorted(target.rglob("*")):
            if len(entries) >= MAX_LIST_ENTRIES:
                entries.append(f"… more than {MAX_LIST_ENTRIES} entries; list a sub-folder")
                break
            shown = item.relative_to(self.root.resolve()).as_posix()
            entries.append(shown + "/" if item.is_dir() else f"{shown} ({item.stat().st_size} bytes)")
        return "\n".join(entries) or "(empty folder)"


def build_toolbox(root: Path) -> Toolbox:
    """A build agent may write anywhere in its cell's working dir and run commands there."""
    return Toolbox(root, lambda rel: True, "the working directory is writable", bash=True)


def mutator_toolbox(root: Path) -> Toolbox:
    """The mutator may write only inside skill/ and its result.json; no shell (it could write anywhere)."""
    def allowed(rel: PurePosixPath) -> bool:
        return rel == PurePosixPath("result.json") or (rel.parts[:1] == ("skill",) and len(rel.parts) > 1)
    return Toolbox(root, allowed, "the mutator may write only inside skill/ and result.json", bash=False)
