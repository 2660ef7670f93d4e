"""Reading one CloudEvents JSON event (structured mode), for every way events arrive:
the server's ``POST /events`` webhook and ``flowforge.contrib.azure.ServiceBusEventSource``."""

from __future__ import annotations

import json

from flowforge._json_depth import JSONTooDeep, loads_bounded
from flowforge.api.v1 import event_pb2

__all__ = ["MalformedCloudEvent", "parse_cloudevent"]

_JSON_CONTENT_TYPES = ("application/json", "text/json")


class MalformedCloudEvent(ValueError):
    """The bytes are not a CloudEvents JSON event FlowForge accepts; the message says why."""


def parse_cloudevent(body: bytes) -> event_pb2.CloudEvent:
    """The event in a CloudEvents JSON body (``specversion`` 1.0, JSON ``data``).

    Missing ``id``/``source``/``type`` are left empty for the server to refuse
    with ``INVALID_ARGUMENT``, like any other published event.

    Raises:
        MalformedCloudEvent: Not JSON, not one object, or a field of the wrong form.
    """
    try:
        document = loads_bounded(body)
    except JSONTooDeep as error:
        raise MalformedCloudEvent(f"the body is refused: {error}") from None
    except ValueError:
        raise MalformedCloudEvent("the body is not JSON; send one CloudEvents JSON object") from None
    if not isinstance(document, dict):
        raise MalformedCloudEvent("the body must be a JSON object (one CloudEvent; batches are not supported)")
    if document.get("specversion", "1.0") != "1.0":
        raise MalformedCloudEvent(f'specversion {document["specversion"]!r} is not supported; use "1.0"')
    if "data_base64" in document:
        raise MalformedCloudEvent("data_base64 is not supported; send the payload as JSON in 'data'")
    content_type = document.get("datacontenttype", "application/json")
    if not isinstance(content_type, str) or not (
        content_type.split(";")[0].strip() in _JSON_CONTENT_TYPES or content_type.split(";")[0].endswith("+json")
    ):
        raise MalformedCloudEvent(f"datacontenttype {content_type!r} is not JSON; only JSON data is supported")
    event = event_pb2.CloudEvent()
    for field in ("id", "source", "type", "subject"):
        value = document.get(field, "")
        if not isinstance(value, str):
            raise MalformedCloudEvent(f"'{field}' must be a string")
        setattr(event, field, value)
    if "time" in document:
        try:
            event.time.FromJsonString(document["time"])
        except (ValueError, TypeError, AttributeError):
            raise MalformedCloudEvent("'time' must be an RFC 3339 timestamp, e.g. \"2026-11-29T18:00:00Z\"") from None
    if document.get("data") is not None:
        event.data = json.dumps(document["data"], separators=(",", ":")).encode()
    return event
