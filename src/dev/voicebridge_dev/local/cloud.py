"""The local cloud: every AWS and Cartesia service the product calls, on loopback, over real HTTP.

- moto's server: S3, DynamoDB, Secrets Manager, CloudWatch (and anything else boto3 asks it for).
- The project's emulators where moto has nothing: the Sonic SageMaker endpoint's response stream and the Cartesia
  API's /tts/sse (:mod:`voicebridge_dev.local.sonic`), Kinesis Video Streams GetMedia
  (:mod:`voicebridge_dev.local.kvs`), Ink's WebSockets (:mod:`voicebridge_dev.local.ink`), and Lambda
  Invoke running the template's own handlers in warm worker processes (:mod:`voicebridge_dev.local.lambda_`).

:class:`LocalCloud` starts them, creates the resources template.yaml declares under their local names
(:func:`voicebridge_dev.template.local_physical_id`), and hands out the ``AWS_ENDPOINT_URL_*`` variables that point
unmodified boto3 at them. These are emulators: their timings and audio stand in for the real services, they are not
the real services.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from voicebridge_dev.local.ink import InkEmulator, Recogniser
from voicebridge_dev.local.kvs import KvsEmulator
from voicebridge_dev.local.lambda_ import LambdaEmulator
from voicebridge_dev.local.sonic import SonicEmulator
from voicebridge_dev.local.speech_engine import SpeechEngine
from voicebridge_dev.template import load_template, local_physical_id

log = logging.getLogger("voicebridge_dev.local")

LOCAL_API_KEY = "local-cartesia-key"
LOCAL_ENDPOINT_NAME = "sonic-local"
_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_ALREADY_THERE = {"BucketAlreadyOwnedByYou", "ResourceExistsException", "ResourceInUseException"}
_MOTO_SERVICES = ("S3", "DYNAMODB", "SECRETS_MANAGER", "CLOUDWATCH", "LOGS", "STS")


class LocalCloud:
    """moto's server plus the project's emulators, with the template's resources created."""

    def __init__(
        self,
        *,
        template: str | Path = "template.yaml",
        region: str = "us-east-1",
        port_base: int = 0,
        engine: SpeechEngine | None = None,
        sonic_time_to_first_byte_ms: float = 40.0,
        sonic_realtime_factor: float = 20.0,
        media_pace: float = 1.0,
        recogniser: Recogniser | None = None,
    ) -> None:
        self.template_path = Path(template)
        self.region = region
        self._port_base = port_base
        self._moto: Any = None
        self.sonic = SonicEmulator(
            port=port_base + 1 if port_base else 0,
            endpoint_name=LOCAL_ENDPOINT_NAME,
            time_to_first_byte_ms=sonic_time_to_first_byte_ms,
            realtime_factor=sonic_realtime_factor,
            engine=engine,
            api_key=LOCAL_API_KEY,
        )
        self.kvs = KvsEmulator(port=port_base + 2 if port_base else 0, region=region, pace=media_pace)
        self.ink = InkEmulator(port=port_base + 3 if port_base else 0, api_key=LOCAL_API_KEY, recogniser=recogniser)
        self.lambdas: LambdaEmulator | None = None
        self.moto_url = ""

    def __enter__(self) -> LocalCloud:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=self._port_base, verbose=False)
        self._moto.start()
        host, port = self._moto.get_host_and_port()
        self.moto_url = f"http://{host}:{port}"
        self.sonic.start()
        self.kvs.start()
        self.ink.start()
        self.create_resources()
        self.lambdas = LambdaEmulator(
            self.template_path,
            port=self._port_base + 4 if self._port_base else 0,
            region=self.region,
            parameters=self.parameters(),
            env=self.env(),
        )
        self.lambdas.start()
        log.info(
            "local cloud up: moto %s, emulators: Sonic %s, KVS %s, Ink %s, Lambda %s",
            self.moto_url,
            self.sonic.url,
            self.kvs.url,
            self.ink.url,
            self.lambdas.url,
        )

    def stop(self) -> None:
        if self.lambdas is not None:
            self.lambdas.stop()
            self.lambdas = None
        self.ink.stop()
        self.kvs.stop()
        self.sonic.stop()
        if self._moto is not None:
            self._moto.stop()
            self._moto = None

    def env(self) -> dict[str, str]:
        """Variables that point boto3 and the product at this local cloud."""
        variables = {f"AWS_ENDPOINT_URL_{name}": self.moto_url for name in _MOTO_SERVICES}
        variables["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] = self.sonic.url
        variables["AWS_ENDPOINT_URL_KINESIS_VIDEO"] = self.kvs.url
        if self.lambdas is not None:
            variables["AWS_ENDPOINT_URL_LAMBDA"] = self.lambdas.url
        variables["SONIC_BASE_URL"] = self.sonic.url
        variables["CARTESIA_BASE_URL"] = self.ink.url
        variables["AWS_DEFAULT_REGION"] = self.region
        variables.update(_CREDENTIALS)
        return variables

    def parameters(self) -> dict[str, str]:
        """Template parameter values for a local run."""
        return {"SonicEndpointName": LOCAL_ENDPOINT_NAME}

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.moto_url,
            region_name=self.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"max_attempts": 1}),
        )

    def create_resources(self) -> None:
        """Create the buckets, tables and secrets the template declares, under their local names (idempotent)."""
        resources = load_template(self.template_path)["Resources"]
        for logical_id, resource in resources.items():
            kind, props = resource.get("Type"), resource.get("Properties", {})
            name = local_physical_id(logical_id)
            try:
                if kind == "AWS::S3::Bucket":
                    self.client("s3").create_bucket(Bucket=name)
                elif kind == "AWS::SecretsManager::Secret":
                    secret = json.dumps({"api_key": LOCAL_API_KEY})
                    self.client("secretsmanager").create_secret(Name=name, SecretString=secret)
                elif kind == "AWS::DynamoDB::Table":
                    self.client("dynamodb").create_table(
                        TableName=name,
                        KeySchema=props["KeySchema"],
                        AttributeDefinitions=props["AttributeDefinitions"],
                        BillingMode="PAY_PER_REQUEST",
                    )
            except ClientError as exc:
                if exc.response["Error"]["Code"] not in _ALREADY_THERE:
                    raise


@contextmanager
def local_cloud_process(
    *, template: str | Path = "template.yaml", options: Sequence[str] = (), stop_timeout_s: float = 30.0
) -> Iterator[dict[str, str]]:
    """``voicebridge local up`` in a child process on ephemeral ports; yields its exports, stops it on exit.

    Measurements use this: the services then run on their own interpreter, as the real ones run on other machines,
    instead of competing with the code under test for this process's GIL.
    """
    command = [
        sys.executable,
        "-m",
        "voicebridge_dev.cli",
        "local",
        "up",
        "--port-base",
        "0",
        "--template",
        str(template),
    ]
    child = subprocess.Popen([*command, *options], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        env: dict[str, str] = {}
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").strip().partition("=")
                env[name] = value
            elif line.startswith("# Ctrl-C"):
                break
        if child.poll() is not None or not env:
            raise RuntimeError("voicebridge local up did not start")
        yield env
    finally:
        child.terminate()
        try:
            child.wait(timeout=stop_timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
