"""deploy/a2a/Dockerfile, read rather than built (no container engine needed): what it copies exists and is let into
the build context, it installs exactly the runtime's dependencies with pyproject.toml's ranges, and it starts the
agent server the stack expects, unprivileged, on the port the stack routes to."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from fnmatch import fnmatch

from packaging.requirements import Requirement

from tests.fixtures import ROOT
from voicebridge_dev.template import load_template

DOCKERFILE = ROOT / "deploy" / "a2a" / "Dockerfile"
REQUIREMENTS = ROOT / "src" / "runtime" / "requirements" / "A2AServer.txt"
STACK = load_template(ROOT / "deploy" / "a2a-streaming.yaml")


def instructions() -> list[tuple[str, str]]:
    """(instruction, arguments) of each line, continuation lines joined and comments left out."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, arguments = stripped.partition(" ")
            found.append((keyword.upper(), arguments.strip()))
    return found


def copied_from_context() -> list[str]:
    """The sources of each COPY that reads the build context (not an earlier stage)."""
    sources = []
    for keyword, arguments in instructions():
        if keyword == "COPY" and not arguments.startswith("--from"):
            *paths, _destination = arguments.split()
            sources.extend(paths)
    return sources


def let_in(path: str) -> bool:
    """Whether .dockerignore lets ``path`` into the context: the last pattern that matches it decides."""
    allowed = True
    for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negated = pattern.startswith("!")
        pattern = pattern.removeprefix("!").rstrip("/")
        if fnmatch(path, pattern) or path.startswith(pattern + "/"):
            allowed = negated
    return allowed


def requirements() -> list[Requirement]:
    lines = REQUIREMENTS.read_text(encoding="utf-8").splitlines()
    return [Requirement(line) for line in map(str.strip, lines) if line and not line.startswith("#")]


def test_every_source_the_image_copies_exists() -> None:
    sources = copied_from_context()

    assert sources == ["src/runtime/requirements/A2AServer.txt", "src/runtime/voicebridge"]
    assert [source for source in sources if not (ROOT / source).exists()] == []


def test_the_build_context_holds_what_the_image_copies_and_nothing_else_of_the_repository() -> None:
    assert [source for source in copied_from_context() if not let_in(source)] == []
    assert not any(let_in(path) for path in ("tests", "src/dev/voicebridge_dev", ".venv", ".git", "template.yaml"))
    assert not let_in("src/runtime/voicebridge/__pycache__")


def test_the_image_installs_exactly_the_runtime_dependencies_with_their_ranges() -> None:
    declared = {
        requirement.name.lower(): requirement
        for requirement in map(
            Requirement, tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
        )
    }
    shipped = {requirement.name.lower(): requirement for requirement in requirements()}

    assert set(shipped) == set(declared)
    for name, requirement in shipped.items():
        assert (requirement.specifier, requirement.extras) == (declared[name].specifier, declared[name].extras), name


def test_both_stages_are_python_313_slim_for_arm64() -> None:
    args = dict(arguments.split("=", 1) for keyword, arguments in instructions() if keyword == "ARG")
    stages = [arguments for keyword, arguments in instructions() if keyword == "FROM"]

    assert re.fullmatch(r"python:3\.13-slim(-\w+)?", args["PYTHON_IMAGE"])
    assert len(stages) == 2
    assert all(stage.startswith("--platform=linux/arm64 ${PYTHON_IMAGE}") for stage in stages)


def test_the_entry_point_is_the_agent_server_module_of_the_package_the_image_copies() -> None:
    [entry] = [json.loads(arguments) for keyword, arguments in instructions() if keyword == "ENTRYPOINT"]
    module = entry[entry.index("-m") + 1]

    assert entry[:2] == ["python", "-m"] and module == "voicebridge.a2a"
    package = "src/runtime/" + module.split(".")[0]
    assert package in copied_from_context()


def test_the_entry_point_module_runs_as_a_program() -> None:
    assert (ROOT / "src" / "runtime" / "voicebridge" / "a2a" / "__main__.py").is_file()


def test_it_runs_as_the_unprivileged_user_the_task_definition_names() -> None:
    [user] = [arguments for keyword, arguments in instructions() if keyword == "USER"]
    [container] = STACK["Resources"]["TaskDefinition"]["Properties"]["ContainerDefinitions"]

    assert user == container["User"] == "10001:10001"


def test_it_listens_where_the_stack_routes_and_stops_on_sigterm() -> None:
    environment = dict(
        pair.split("=", 1) for keyword, arguments in instructions() if keyword == "ENV" for pair in arguments.split()
    )
    [exposed] = [arguments for keyword, arguments in instructions() if keyword == "EXPOSE"]

    assert (environment["A2A_HOST"], environment["A2A_PORT"]) == ("0.0.0.0", "8080")
    assert int(exposed) == int(environment["A2A_PORT"]) == STACK["Parameters"]["ContainerPort"]["Default"]
    assert ("STOPSIGNAL", "SIGTERM") in instructions()


def test_nothing_is_written_at_run_time_but_to_tmp() -> None:
    environment = " ".join(arguments for keyword, arguments in instructions() if keyword == "ENV")

    assert "PYTHONDONTWRITEBYTECODE=1" in environment
    assert any(keyword == "RUN" and "compileall" in arguments for keyword, arguments in instructions())


def test_tmp_is_a_volume_the_unprivileged_user_may_write_where_the_task_mounts_its_scratch_space() -> None:
    [volume] = [json.loads(arguments) for keyword, arguments in instructions() if keyword == "VOLUME"]
    [container] = STACK["Resources"]["TaskDefinition"]["Properties"]["ContainerDefinitions"]

    assert volume == [mount["ContainerPath"] for mount in container["MountPoints"]] == ["/tmp"]
    assert any(keyword == "RUN" and "chmod 1777 /tmp" in arguments for keyword, arguments in instructions())


def test_make_builds_the_image_for_arm64_with_the_engine_it_finds() -> None:
    shown = subprocess.run(
        ["make", "--no-print-directory", "-n", "a2a-image", "A2A_ENGINE=podman", "A2A_IMAGE=vb:test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout

    assert "podman build --platform linux/arm64 --file deploy/a2a/Dockerfile --tag vb:test ." in shown


def test_make_without_a_container_engine_says_which_it_can_use() -> None:
    ran = subprocess.run(
        ["make", "--no-print-directory", "a2a-image", "A2A_ENGINE="],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert ran.returncode != 0
    assert "docker, podman, finch or buildah" in ran.stderr
