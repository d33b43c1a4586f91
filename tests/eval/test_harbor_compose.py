"""A task's docker-compose.yaml as Harbor reads it: only that name, only service main, its literal variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.harbor_compose import ComposeError, env_lines, read_compose


def env_dir(tmp_path: Path, compose: str | None, name: str = "docker-compose.yaml",
            dockerfile: str = "FROM x\n") -> Path:
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text(dockerfile)
    if compose is not None:
        (env / name).write_text(compose)
    return env


def test_another_file_name_is_data_as_harbor_reads_only_docker_compose_yaml(tmp_path: Path) -> None:
    env = env_dir(tmp_path, "services:\n  web: {}\n  db: {}\n", name="docker-compose.yml")
    assert read_compose(env).used is False


def test_a_mapping_environment_and_a_plain_build_run_as_the_image(tmp_path: Path) -> None:
    env = env_dir(tmp_path, "services:\n  main:\n    build: .\n    environment:\n      LANG: C.UTF-8\n"
                            "      TOKEN: ${TOKEN}\n      EMPTY:\n    ports: ['80:80']\n")
    compose = read_compose(env)
    assert compose.used and compose.env == {"LANG": "C.UTF-8"}
    assert compose.notes[1].endswith("never given to a container): TOKEN, EMPTY")
    assert compose.notes[2] == "environment/docker-compose.yaml: ignored keys of main: ports"
    assert env_lines(compose.env) == 'ENV LANG="C.UTF-8"\n'


def test_no_service_is_ignored_with_a_note(tmp_path: Path) -> None:
    compose = read_compose(env_dir(tmp_path, "version: '3'\n"))
    assert not compose.used and compose.notes == ("environment/docker-compose.yaml declares no service; ignored",)


@pytest.mark.parametrize(("text", "message"), [
    ("services:\n  main:\n    build:\n      context: ../other\n", "is not the task's own Dockerfile"),
    ("services:\n  main:\n    build:\n      context: .\n      dockerfile: Dockerfile.gpu\n", "is not the task's own"),
    ("services:\n  main: {}\n  redis:\n    image: redis\n", "declares the service(s) redis beside main"),
    ("services:\n  main:\n    environment: 3\n", "must be a list of NAME=value or a mapping"),
])
def test_what_one_container_cannot_honour_is_refused(text: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ComposeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_compose(env_dir(tmp_path, text))
