"""Cold start: what importing each function's handler costs, next to bare ``import boto3``, in one run.

Lambda imports the handler's module while it initializes a new container (its code folder is read-only, so an
interpreter can write no bytecode there), and every function needs boto3 before it can answer. This lays out each
function's folder as ``sam build`` does (its own requirements, the runtime package, hash-checked bytecode: the
``package`` target of ``src/runtime/Makefile``), but for this machine's architecture, and times in fresh
``python3.13`` processes with ``PYTHONDONTWRITEBYTECODE=1``, interleaved, the median of ``rounds``:

- the peer: bare ``import boto3``, installed and compiled as the Lambda runtime provides it (the same boto3 sits
  behind every function folder, as ``/var/runtime`` does in Lambda);
- each handler's import as shipped, with only the sources (how the artifacts were before the build compiled them),
  and with unchecked-hash bytecode (to weigh the check the build keeps), as ratios to bare boto3;
- what the first invocation builds before its first request, as shipped: boto3 and the clients, and the libraries
  imported where they are used (numpy and soxr at Synthesize's first cache miss, the cartesia SDK for Ink and for
  ``SONIC_BACKEND=cartesia-api``, onnxruntime and the voice models at a listener's first audio and first stop);
- Python lines shipped per function, and the artifacts' sizes (the arm64 ones in ``.aws-sam/build`` when built).

Requirements are installed with ``python3.13 -m pip install --target`` once, cached under ``out/coldstart`` by a hash
of the requirements file, so later runs work offline. Not measured here: Lambda's own share of a cold start (starting
the microVM, fetching and unpacking the code, the runtime's bootstrap), arm64's speed, and SnapStart's restore.

Run ``voicebridge bench --only coldstart`` or ``python bench/bench_coldstart.py [--rounds N] [--json]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from voicebridge_dev.template import function_spec, load_template

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "src" / "runtime"
CACHE = ROOT / "out" / "coldstart"
LAMBDA_PYTHON = "python3.13"
ROUNDS = 15
TARGETS = {
    "AwaitTurnFunction": 1.2,
    "CallRecordFunction": 1.2,
    "StartListeningFunction": 1.2,
    "SynthesizeFunction": 1.5,
    "TranscribeStreamFunction": 1.5,
}
"""The most each handler's import, as shipped, may cost in multiples of bare ``import boto3``."""
VARIANTS = ("shipped", "source_only", "unchecked_hash")
LISTENING_FUNCTIONS = ("TranscribeStreamFunction",)
"""The functions whose artifact carries the voice models (``LISTENING_FUNCTIONS`` in src/runtime/Makefile)."""

# What each function's first invocation builds before its first request, stage by stage; no stage touches the
# network (the Cartesia API key, read from Secrets Manager in Lambda, is given).
_GIVEN_KEY = "from voicebridge import container\ncontainer.cartesia_api_key = lambda: 'bench'\n"
FIRST_USE: dict[str, dict[str, str]] = {
    "AwaitTurnFunction": {"turn table client": "from voicebridge import container\ncontainer.turn_store()"},
    "StartListeningFunction": {
        "turn table and Lambda clients": "from voicebridge import container\n"
        "container.turn_store()\ncontainer.client('lambda')",
    },
    "SynthesizeFunction": {
        "synthesizer (SageMaker, S3 clients)": "from voicebridge import container\ncontainer.synthesizer()",
        "first cache miss: converter (numpy, soxr)": "from voicebridge.audio.convert import MulawConverter\n"
        "MulawConverter('pcm_s16le', 24000, resampler='soxr').feed(bytes(960))",
    },
    "TranscribeStreamFunction": {
        "turn table, Lambda, KVS clients": "from voicebridge import container\n"
        "container.turn_store()\ncontainer.client('lambda')\ncontainer.client('kinesisvideo')",
        "Ink client (the cartesia SDK)": _GIVEN_KEY + "container.ink_client()",
        "first audio: Silero VAD (onnxruntime, the model)": "import numpy\n"
        "from voicebridge.audio.vad import detector\ndetector('silero').voiced(numpy.zeros((13, 160), numpy.float32))",
        "first stop: Smart Turn (soxr, features, the model)": "from voicebridge.audio.end_of_turn import "
        "EndOfTurnModel, telephone_to_model\nEndOfTurnModel().score(telephone_to_model(bytes(16000)))",
    },
}
CARTESIA_API = "SynthesizeFunction (cartesia-api)"
"""Synthesize again with ``SONIC_BACKEND=cartesia-api``: its synthesizer builds the cartesia SDK's client."""
FIRST_USE[CARTESIA_API] = {"synthesizer (the cartesia SDK)": _GIVEN_KEY + "container.synthesizer()"}

_PROBE = """
import json, sys, time
from importlib import import_module
marks = [time.perf_counter()]
import_module(sys.argv[1])
marks.append(time.perf_counter())
for stage in json.loads(sys.argv[2]):
    exec(stage, {})
    marks.append(time.perf_counter())
print(json.dumps([(b - a) * 1000 for a, b in zip(marks, marks[1:])]))
"""
"""Run in each fresh process: the import of ``argv[1]``, then each first-use stage, in ms."""


class Probe(NamedTuple):
    """One kind of fresh process: what it imports, from where, what it builds next, and with which variables."""

    name: str
    module: str
    folder: Path | None
    stages: dict[str, str]
    environment: dict[str, str]


def run(rounds: int = ROUNDS) -> dict[str, Any]:
    """Medians of ``rounds`` fresh processes per probe, interleaved; the layout's lines and sizes."""
    python = _lambda_python()
    if python is None:
        return {"skipped": f"{LAMBDA_PYTHON} (the Lambda runtime's Python) is not on PATH"}
    executable, version = python
    template = load_template(ROOT / "template.yaml")
    functions = {
        name: resource["Properties"]["Handler"].rsplit(".", 1)[0]
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    boto3_folder = _runtime_boto3(executable)
    probes = [Probe("boto3", "boto3", None, {}, {})]
    layouts: dict[str, dict[str, Path]] = {}
    for function, module in functions.items():
        layouts[function] = _layouts(executable, function)
        environment = _environment(template, function)
        for variant, folder in layouts[function].items():
            stages = FIRST_USE.get(function, {}) if variant == "shipped" else {}
            probes.append(Probe(f"{function}/{variant}", module, folder, stages, environment))
        if function == "SynthesizeFunction":
            cartesia = {**environment, "SONIC_BACKEND": "cartesia-api"}
            folder = layouts[function]["shipped"]
            probes.append(Probe(f"{CARTESIA_API}/shipped", module, folder, FIRST_USE[CARTESIA_API], cartesia))

    timings: dict[str, list[list[float]]] = {probe.name: [] for probe in probes}
    for round_number in range(rounds):
        order = list(probes)
        random.Random(round_number).shuffle(order)
        for probe in order:
            timings[probe.name].append(_measure(executable, probe, boto3_folder))

    boto3_ms = statistics.median(times[0] for times in timings["boto3"])
    figures: dict[str, Any] = {
        "python": version,
        "machine": os.uname().machine,
        "rounds": rounds,
        "boto3": {"version": metadata.version("boto3"), "import_ms": boto3_ms},
        "functions": {},
    }
    for function in functions:
        row: dict[str, Any] = {"target": TARGETS.get(function)}
        for variant in VARIANTS:
            import_ms = statistics.median(times[0] for times in timings[f"{function}/{variant}"])
            row[variant] = {"import_ms": import_ms, "ratio": import_ms / boto3_ms}
        row["meets_target"] = row["target"] is None or row["shipped"]["ratio"] <= row["target"]
        row["first_use_ms"] = _stage_medians(timings[f"{function}/shipped"], FIRST_USE.get(function, {}))
        row["artifact"] = _artifact(layouts[function]["shipped"], CACHE / "zip" / f"{function}.zip")
        built = ROOT / ".aws-sam" / "build" / function
        if built.is_dir():
            row["artifact_arm64"] = _artifact(built, CACHE / "zip" / f"{function}-arm64.zip", lines=False)
        figures["functions"][function] = row
    figures["functions"]["SynthesizeFunction"]["first_use_ms"].update(
        _stage_medians(timings[f"{CARTESIA_API}/shipped"], FIRST_USE[CARTESIA_API], prefix="cartesia-api: ")
    )
    figures["not_measured"] = [
        "Lambda's own share of a cold start: the microVM, fetching and unpacking the code, the runtime's bootstrap",
        "arm64 (the functions' architecture): figures are this machine's, as ratios to boto3 on it",
        "SnapStart's restore (the template does not turn SnapStart on; see docs/cold-start.md)",
    ]
    return figures


def _lambda_python() -> tuple[str, str] | None:
    """The Lambda runtime's interpreter (its real path: a launcher such as pyenv's would add its own start-up)."""
    found = shutil.which(LAMBDA_PYTHON)
    if found is None:
        return None
    answer = subprocess.run(
        [found, "-c", "import sys; print(sys.executable); print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if answer.returncode != 0:
        return None
    executable, version = answer.stdout.split()
    return executable, version


def _runtime_boto3(python: str) -> Path:
    """boto3 as the Lambda runtime provides it, compiled; the version is the one this project is tested with."""
    return _installed(python, f"boto3=={metadata.version('boto3')}\n", "runtime-boto3", compiled=True)


def _installed(python: str, requirements: str, label: str, *, compiled: bool = False) -> Path:
    """``requirements`` installed for this machine into a cached folder; pip runs only when it is not there yet."""
    key = hashlib.sha256(f"{python}\n{os.uname().machine}\n{requirements}".encode()).hexdigest()[:16]
    folder = CACHE / "requirements" / f"{label}-{key}"
    if (folder / ".complete").is_file():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    listed = folder.parent / f"{label}-{key}.txt"
    listed.write_text(requirements, encoding="utf-8")
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "--target",
            str(folder),
            "--requirement",
            str(listed),
        ],
        check=True,
        timeout=900,
    )
    if compiled:
        subprocess.run([python, "-m", "compileall", "-q", "-j", "0", str(folder)], check=True, timeout=600)
    # As the build does: console scripts are not shipped.
    shutil.rmtree(folder / "bin", ignore_errors=True)
    (folder / ".complete").touch()
    return folder


def _layouts(python: str, function: str) -> dict[str, Path]:
    """The function's folder as shipped, with its sources only, and with unchecked-hash bytecode."""
    requirements = (RUNTIME / "requirements" / f"{function}.txt").read_text(encoding="utf-8")
    installed = _installed(python, requirements, function)
    folders = {variant: CACHE / "functions" / variant / function for variant in VARIANTS}
    for folder in folders.values():
        shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(installed, folders["shipped"], ignore=shutil.ignore_patterns(".complete"))
    subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(RUNTIME),
            "package",
            f"ARTIFACTS_DIR={folders['shipped']}",
            f"PYTHON={python}",
            # As src/runtime/Makefile's build: the functions that listen ship the models.
            f"WITH_MODELS={'yes' if function in LISTENING_FUNCTIONS else 'no'}",
        ],
        check=True,
        timeout=600,
        stdout=subprocess.DEVNULL,
    )
    shutil.copytree(folders["shipped"], folders["source_only"], ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(folders["shipped"], folders["unchecked_hash"])
    subprocess.run(
        [
            python,
            "-m",
            "compileall",
            "-q",
            "-f",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            str(folders["unchecked_hash"]),
        ],
        check=True,
        timeout=600,
        stdout=subprocess.DEVNULL,
    )
    return folders


def _environment(template: dict[str, Any], function: str) -> dict[str, str]:
    """The function's variables as the template sets them, and a region; no AWS configuration file is read."""
    environment = function_spec(template, function).environment
    return {
        **environment,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def _measure(python: str, probe: Probe, boto3_folder: Path) -> list[float]:
    """One fresh process: ms for the import, then for each stage. No site-packages: only the folders count."""
    path = [str(probe.folder)] if probe.folder else []
    environment = {
        **probe.environment,
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([*path, str(boto3_folder)]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    answer = subprocess.run(
        [python, "-S", "-c", _PROBE, probe.module, json.dumps(list(probe.stages.values()))],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=300,
    )
    if answer.returncode != 0:
        raise RuntimeError(f"{probe.name} failed: {answer.stderr.strip()[-2000:]}")
    times: list[float] = json.loads(answer.stdout.splitlines()[-1])
    return times


def _stage_medians(runs: list[list[float]], stages: dict[str, str], prefix: str = "") -> dict[str, float]:
    return {f"{prefix}{name}": statistics.median(run[index + 1] for run in runs) for index, name in enumerate(stages)}


def _artifact(folder: Path, archive: Path, *, lines: bool = True) -> dict[str, int]:
    """Python lines (all, and the runtime package's), bytes unpacked and zipped as ``sam deploy`` uploads them."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    figures = {"files": len(files), "bytes": sum(path.stat().st_size for path in files)}
    if lines:
        sources = [path for path in files if path.suffix == ".py"]
        figures["python_lines"] = sum(len(path.read_bytes().splitlines()) for path in sources)
        figures["runtime_lines"] = sum(
            len(path.read_bytes().splitlines())
            for path in sources
            if path.relative_to(folder).parts[0] == "voicebridge"
        )
    archive.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in files:
            bundle.write(path, path.relative_to(folder))
    figures["zip_bytes"] = archive.stat().st_size
    archive.unlink()
    return figures


def report(figures: dict[str, Any]) -> str:
    """The figures of :func:`run` as tables."""
    if "skipped" in figures:
        return f"skipped: {figures['skipped']}"
    boto3_ms = figures["boto3"]["import_ms"]
    lines = [
        f"python {figures['python']} on {figures['machine']}, fresh processes, PYTHONDONTWRITEBYTECODE=1, "
        f"median of {figures['rounds']}, interleaved",
        f"bare `import boto3` ({figures['boto3']['version']}, compiled): {boto3_ms:.1f} ms",
        "",
        f"{'handler import':<26}" + "".join(f"{variant.replace('_', ' '):>20}" for variant in VARIANTS) + "  target",
    ]
    for function, row in figures["functions"].items():
        cells = "".join(f"{row[v]['import_ms']:>10.1f} ms {row[v]['ratio']:>5.2f}x" for v in VARIANTS)
        target = f"<={row['target']}x {'ok' if row['meets_target'] else 'MISSED'}" if row["target"] else ""
        lines.append(f"{function:<26}{cells}  {target}")
    lines += ["", "first invocation, before its first request (as shipped):"]
    for function, row in figures["functions"].items():
        for stage, ms in row["first_use_ms"].items():
            lines.append(f"  {function:<26}{stage:<48}{ms:>8.1f} ms")
    lines += ["", f"{'artifact':<26}{'Python lines':>14}{'runtime':>9}{'MB':>8}{'zip MB':>8}{'arm64 MB':>10}{'zip':>7}"]
    for function, row in figures["functions"].items():
        shipped = row["artifact"]
        arm64 = row.get("artifact_arm64")
        built = f"{arm64['bytes'] / 1e6:>10.1f}{arm64['zip_bytes'] / 1e6:>7.1f}" if arm64 else f"{'(not built)':>17}"
        lines.append(
            f"{function:<26}{shipped['python_lines']:>14}{shipped['runtime_lines']:>9}"
            f"{shipped['bytes'] / 1e6:>8.1f}{shipped['zip_bytes'] / 1e6:>8.1f}{built}"
        )
    lines += ["", "not measured:", *(f"  {item}" for item in figures["not_measured"])]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="fresh processes per probe")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    arguments = parser.parse_args()
    result = run(arguments.rounds)
    print(json.dumps(result, indent=2) if arguments.json else report(result))
