"""GetMedia, read as it arrives: the caller's audio from Kinesis Video Streams.

``GetDataEndpoint(APIName=GET_MEDIA)`` gives the stream's data endpoint (cached per container), then ``GetMedia``
with a ``FRAGMENT_NUMBER`` start selector returns a long-lived HTTP response whose body is a concatenation of
Matroska fragments. The body is read with ``read1``: whatever bytes have arrived are handed on at once, rather than
waiting to fill a buffer. A read timeout (KVS sends nothing for ~3 s when the producer stalls), a dropped connection
or a limit error is raised as :class:`MediaInterrupted`; the consumer resumes from its last fragment.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from urllib3.exceptions import HTTPError as Urllib3Error

from voicebridge import aws
from voicebridge.errors import ConfigurationError, VoiceBridgeError

READ_SIZE = 64 * 1024


class MediaInterrupted(VoiceBridgeError):
    """The media connection ended abnormally; resume from the last fragment."""

    code = "MediaInterrupted"


@lru_cache(maxsize=64)
def _data_endpoint(stream_arn: str) -> str:
    try:
        answer = aws.client("kinesisvideo").get_data_endpoint(StreamARN=stream_arn, APIName="GET_MEDIA")
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("ResourceNotFoundException", "NotAuthorizedException", "AccessDeniedException"):
            raise ConfigurationError(f"cannot read the media stream ({code})") from None
        raise MediaInterrupted(f"GetDataEndpoint failed ({code})") from None
    except BotoCoreError as exc:
        raise MediaInterrupted(f"GetDataEndpoint unreachable ({type(exc).__name__})") from None
    return str(answer["DataEndpoint"])


@lru_cache(maxsize=16)
def _media_client(endpoint: str, read_timeout_s: float) -> Any:
    config = Config(connect_timeout=2, read_timeout=read_timeout_s, retries={"mode": "standard", "max_attempts": 2})
    return aws.session().client("kinesis-video-media", endpoint_url=endpoint, config=config)


class MediaSource:
    """The media of one stream, from a given fragment on."""

    def __init__(self, stream_arn: str, *, read_timeout_s: float = 3.0) -> None:
        self.stream_arn = stream_arn
        self._read_timeout_s = read_timeout_s

    def read_from(self, fragment_number: str) -> Iterator[bytes]:
        """Bytes of the payload from ``fragment_number`` (included) as they arrive; returns at its clean end."""
        client = _media_client(_data_endpoint(self.stream_arn), self._read_timeout_s)
        try:
            answer = client.get_media(
                StreamARN=self.stream_arn,
                StartSelector={"StartSelectorType": "FRAGMENT_NUMBER", "AfterFragmentNumber": fragment_number},
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("ResourceNotFoundException", "NotAuthorizedException", "InvalidArgumentException"):
                raise ConfigurationError(f"GetMedia refused ({code})") from None
            raise MediaInterrupted(f"GetMedia failed ({code})") from None
        except (BotoCoreError, Urllib3Error) as exc:
            raise MediaInterrupted(f"GetMedia unreachable ({type(exc).__name__})") from None
        body = answer["Payload"]
        raw = body._raw_stream
        try:
            while True:
                data = raw.read1(READ_SIZE)
                if not data:
                    return
                yield data
        except (BotoCoreError, Urllib3Error, OSError) as exc:
            raise MediaInterrupted(f"media read interrupted ({type(exc).__name__})") from None
        finally:
            body.close()
