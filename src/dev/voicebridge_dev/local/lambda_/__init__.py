"""EMULATOR of AWS Lambda's ``Invoke`` API, running the template's Python handlers — a stand-in, not Lambda.

It speaks the ``Invoke`` operation of the Lambda API (rest-json) over loopback HTTP/1.1, so an unmodified
boto3 client pointed at it with ``AWS_ENDPOINT_URL_LAMBDA`` invokes the functions template.yaml declares. The
operation is stated in :mod:`~.invoke`, the names a function answers to in :mod:`~.functions`, the server and
its ``/_emulator/...`` control plane in :mod:`~.server`, and the warm containers the handlers run in, with the
pipes to them, in :mod:`~.containers` (the emulator's side) and :mod:`~.worker` (the container's). Faults are
:mod:`~.faults`, records :mod:`~.records`, the handler's context :mod:`~.context`, errors :mod:`~.errors`; the
emulator itself, :class:`LambdaEmulator`, is :mod:`~.emulator`.

>>> with LambdaEmulator("template.yaml", env=cloud.env()) as emu:  # doctest: +SKIP
...     client = boto3.client("lambda", endpoint_url=emu.url, region_name="us-east-1")
...     client.invoke(FunctionName="SynthesizeFunction", Payload=json.dumps(event))
"""

from voicebridge_dev.local.lambda_.containers import INIT_TIMEOUT_S
from voicebridge_dev.local.lambda_.context import ClientContext, InvokeContext
from voicebridge_dev.local.lambda_.emulator import EVENT_QUEUE_LIMIT, KeptInvocation, LambdaEmulator
from voicebridge_dev.local.lambda_.errors import FaultSpecError
from voicebridge_dev.local.lambda_.faults import Fault, FaultKind
from voicebridge_dev.local.lambda_.records import InvocationRecord, InvocationStatus, InvocationType

__all__ = [
    "EVENT_QUEUE_LIMIT",
    "INIT_TIMEOUT_S",
    "ClientContext",
    "Fault",
    "FaultKind",
    "FaultSpecError",
    "InvocationRecord",
    "InvocationStatus",
    "InvocationType",
    "InvokeContext",
    "KeptInvocation",
    "LambdaEmulator",
]
