"""A Harbor task's `environment/docker-compose.yaml`: what of it one container can honour.

Harbor's rule (its DockerEnvironment): a task uses compose exactly when `environment/docker-compose.yaml`
exists (no other name), and the agent and the verifier run in its service `main`. So here: another file name
is data; a `docker-compose.yaml` the task's Dockerfile COPYs or ADDs by name is data (it ends up in the image,
Terminal-Bench tasks ship such files); otherwise the file is read, and it is unsupported only when it
declares a service besides `main` (another container the task needs). A single `main` built from the task's
own Dockerfile (or naming no build) runs as that image: its literal `environment` values are kept (the
importer bakes them into the image as ENV lines); a `${VAR}` value is the host's or Harbor's variable and is
never passed (no secret enters a container); other keys (command, volumes, ports...) are listed as ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

COMPOSE_FILE = "docker-compose.yaml"          # the only name Harbor reads
MAIN = "main"
HARBOR_CONTEXT = {"", ".", "./", "${CONTEXT_DIR}"}   # the build contexts that are the task's environment/
NAME_IN_COPY = re.compile(r"^\s*(?:COPY|ADD)\s[^\n]*\bdocker-compose\.yaml\b", re.IGNORECASE | re.MULTILINE)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
IGNORED_QUIETLY = {"build", "image", "environment", "command", "container_name", "volumes", "healthcheck"}


class ComposeError(ValueError):
    """The compose file declares what one container cannot run; the message says what."""


@dataclass(frozen=True)
class Compose:
    """What the task's compose file means here: `used` is False when there is none or it is data."""
    used: bool = False
    env: dict[str, str] = field(default_factory=dict)    # main's literal variables
    notes: tuple[str, ...] = ()


def _env_items(raw, where: str) -> list[tuple[str, str | None]]:
    if raw is None:
        return []
    if isinstance(raw, dict):
        return [(str(k), None if v is None else str(v)) for k, v in raw.items()]
    if isinstance(raw, list):
        pairs = []
        for item in raw:
            name, eq, value = str(item).partition("=")
            pairs.append((name.strip(), value if eq else None))
        return pairs
    raise ComposeError(f"{where}: services.main.environment must be a list of NAME=value or a mapping")


def _build_is_the_task(build, where: str) -> None:
    if build is None:
        return
    context, dockerfile = (build, None) if isinstance(build, str) else (
        (build.get("context", "."), build.get("dockerfile")) if isinstance(build, dict) else (None, None))
    own = context is not None and str(context).strip() in HARBOR_CONTEXT
    if not own or dockerfile not in (None, "Dockerfile"):
        raise ComposeError(f"{where}: services.main.build ({build!r}) is not the task's own Dockerfile "
                           "(context . or ${CONTEXT_DIR}); only the task's image is run")


def read_compose(environment: Path, yaml_text: str | None = None) -> Compose:
    """The task's compose file, judged as above. `yaml_text` is the file's text (read by the caller, which
    checks its encoding); None = read it here."""
    path = environment / COMPOSE_FILE
    if not path.is_file():
        return Compose()
    where = f"environment/{COMPOSE_FILE}"
    dockerfile = environment / "Dockerfile"
    if dockerfile.is_file() and NAME_IN_COPY.search(dockerfile.read_text(encoding="utf-8", errors="replace")):
        return Compose(notes=(f"{where} is data (the Dockerfile copies it into the image), not a compose "
                              "environment",))
    import yaml
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8") if yaml_text is None else yaml_text)
    except yaml.YAMLError as err:
        raise ComposeError(f"{where}: not valid YAML ({str(err).splitlines()[0]})") from None
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or not services:
        return Compose(notes=(f"{where} declares no service; ignored",))
    others = sorted(str(name) for name in services if name != MAIN)
    if others:
        raise ComposeError(f"{where}: declares the service(s) {', '.join(others)} beside main: a "
                           "multi-container task (one container per trial is what this harness runs)")
    main = services[MAIN] or {}
    if not isinstance(main, dict):
        raise ComposeError(f"{where}: services.main must be a mapping")
    _build_is_the_task(main.get("build"), where)
    env, dropped = {}, []
    for name, value in _env_items(main.get("environment"), where):
        if not ENV_NAME.match(name) or value is None or "$" in value:
            dropped.append(name)
        else:
            env[name] = value
    notes = [f"{where}: one service, main, run as the task's image"
             + (f" with {', '.join(sorted(env))} set" if env else "")]
    if dropped:
        notes.append(f"{where}: not passed (host or Harbor variables, never given to a container): "
                     f"{', '.join(dropped)}")
    ignored = sorted(str(k) for k in main if k not in IGNORED_QUIETLY)
    if ignored:
        notes.append(f"{where}: ignored keys of main: {', '.join(ignored)}")
    return Compose(used=True, env=env, notes=tuple(notes))


def env_lines(env: dict[str, str]) -> str:
    """Dockerfile ENV lines setting `env` (JSON-quoted values, as Dockerfile ENV accepts)."""
    import json
    return "".join(f"ENV {name}={json.dumps(value)}\n" for name, value in sorted(env.items()))
