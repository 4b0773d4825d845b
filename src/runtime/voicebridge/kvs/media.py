"""GetMedia, read as it arrives: the caller's audio from Kinesis Video Streams.

``GetDataEndpoint(APIName=GET_MEDIA)`` gives the stream's data endpoint (asked once per source), then ``GetMedia``
with a start selector (:class:`StartSelector`) returns a long-lived HTTP response whose body is a concatenation of
Matroska fragments. The body is read with ``read1``: whatever bytes have arrived are handed on at once, rather than
waiting to fill a buffer. A read timeout (KVS sends nothing for ~3 s when the producer stalls), a dropped connection
or a limit error is raised as :class:`MediaInterrupted`; the consumer resumes from its last fragment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from botocore.exceptions import BotoCoreError, ClientError
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import ReadTimeoutError

from voicebridge.errors import ConfigurationError, MediaInterrupted, MediaStalled

if TYPE_CHECKING:
    from types_boto3_kinesis_video_media.client import KinesisVideoMediaClient
    from types_boto3_kinesis_video_media.type_defs import StartSelectorTypeDef
    from types_boto3_kinesisvideo.client import KinesisVideoClient

READ_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class StartSelector:
    """Where a GetMedia read starts (botocore's ``kinesis-video-media`` StartSelector).

    AWS's StartSelector reference: ``FRAGMENT_NUMBER`` starts with the chunk *after* ``AfterFragmentNumber``
    (exclusive); ``PRODUCER_TIMESTAMP`` / ``SERVER_TIMESTAMP`` start with the chunk *containing* the timestamp
    (inclusive); ``CONTINUATION_TOKEN`` resumes after the fragment whose trailing tags carried the token. The
    consumer never relies on ``FRAGMENT_NUMBER``'s exclusivity: it names the fragment *before* the one it needs,
    and skips by position whatever it has already sent, so it is right under either reading.
    """

    kind: Literal["FRAGMENT_NUMBER", "PRODUCER_TIMESTAMP", "SERVER_TIMESTAMP", "CONTINUATION_TOKEN"]
    value: str

    @classmethod
    def after_fragment(cls, number: str) -> StartSelector:
        return cls("FRAGMENT_NUMBER", number)

    @classmethod
    def producer_time(cls, epoch_ms: int) -> StartSelector:
        return cls("PRODUCER_TIMESTAMP", str(epoch_ms))

    @classmethod
    def continuation(cls, token: str) -> StartSelector:
        return cls("CONTINUATION_TOKEN", token)

    def to_api(self) -> StartSelectorTypeDef:
        """The ``StartSelector`` parameter of ``get_media``."""
        if self.kind == "FRAGMENT_NUMBER":
            return {"StartSelectorType": self.kind, "AfterFragmentNumber": self.value}
        if self.kind == "CONTINUATION_TOKEN":
            return {"StartSelectorType": self.kind, "ContinuationToken": self.value}
        return {"StartSelectorType": self.kind, "StartTimestamp": datetime.fromtimestamp(int(self.value) / 1000, UTC)}

    def __str__(self) -> str:
        return f"{self.kind}={self.value}"


def data_endpoint(control: KinesisVideoClient, stream_arn: str) -> str:
    """The stream's GetMedia endpoint (``GetDataEndpoint``); MediaInterrupted when it is worth asking again."""
    try:
        answer = control.get_data_endpoint(StreamARN=stream_arn, APIName="GET_MEDIA")
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("ResourceNotFoundException", "NotAuthorizedException", "AccessDeniedException"):
            raise ConfigurationError(f"cannot read the media stream ({code})") from None
        raise MediaInterrupted(f"GetDataEndpoint failed ({code})") from None
    except BotoCoreError as exc:
        raise MediaInterrupted(f"GetDataEndpoint unreachable ({type(exc).__name__})") from None
    return str(answer["DataEndpoint"])


class MediaSource:
    """The media of one stream, from a given fragment on.

    ``control`` is a ``kinesisvideo`` client; ``media_client`` gives a ``kinesis-video-media`` client for a data
    endpoint. The endpoint is looked up on the first read and kept."""

    def __init__(
        self, stream_arn: str, *, control: KinesisVideoClient, media_client: Callable[[str], KinesisVideoMediaClient]
    ) -> None:
        self.stream_arn = stream_arn
        self._control = control
        self._media_client = media_client
        self._endpoint: str | None = None

    def read(self, selector: StartSelector) -> Iterator[bytes]:
        """Bytes of the payload from ``selector`` on, as they arrive; returns at its clean end."""
        if self._endpoint is None:
            self._endpoint = data_endpoint(self._control, self.stream_arn)
        client = self._media_client(self._endpoint)
        try:
            answer = client.get_media(StreamARN=self.stream_arn, StartSelector=selector.to_api())
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("ResourceNotFoundException", "NotAuthorizedException", "InvalidArgumentException"):
                raise ConfigurationError(f"GetMedia refused ({code})") from None
            raise MediaInterrupted(f"GetMedia failed ({code})") from None
        except (BotoCoreError, Urllib3Error) as exc:
            raise MediaInterrupted(f"GetMedia unreachable ({type(exc).__name__})") from None
        body = answer["Payload"]
        # The urllib3 response under botocore's StreamingBody has read1; the stubs leave this attribute out.
        raw = body._raw_stream  # type: ignore[attr-defined]
        try:
            while True:
                data = raw.read1(READ_SIZE)
                if not data:
                    return
                yield data
        except (ReadTimeoutError, TimeoutError) as exc:
            raise MediaStalled(f"no media for the read timeout ({type(exc).__name__})") from None
        except (BotoCoreError, Urllib3Error, OSError) as exc:
            raise MediaInterrupted(f"media read interrupted ({type(exc).__name__})") from None
        finally:
            body.close()
