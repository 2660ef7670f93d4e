"""``POST /events``: publish a CloudEvents JSON event over HTTP (docs/events.md).

The endpoint runs in the server process on the same event loop as gRPC (aiohttp)
and publishes through the same validation and transaction as the ``PublishEvent``
RPC. When the server has a secret for the namespace (with authentication on, every
namespace needs one), the request must carry the time it was signed and an
HMAC-SHA256 signature of that time, the namespace and the raw body::

    X-FlowForge-Timestamp: <Unix seconds>
    X-FlowForge-Signature: sha256=<hex of HMAC-SHA256(secret, "<timestamp>.<namespace>." + raw body)>

so a signed request can neither be replayed into another namespace nor, after five
minutes, at all. Only JSON bodies are accepted (``application/json``,
``application/cloudevents+json`` or another ``+json`` type).

Answers: 202 with the dedupe outcome and the workflows; 400 for a malformed event;
401 for a missing, stale or wrong signature (checked before anything else, so
nothing happens); 404 for an unknown namespace; 413 for a body over the payload
limit; 415 for a body that is not JSON; 503 when the store is down. Secrets and
bodies are never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Mapping
from typing import Any

import grpc
from aiohttp import web

from flowforge._cloudevents import MalformedCloudEvent, parse_cloudevent
from flowforge.api.v1 import event_pb2
from flowforge.server.errors import ServiceError
from flowforge.server.frontend import WorkflowService
from flowforge.server.http import HttpListener

__all__ = ["DEFAULT_SECRET_KEY", "MAX_CLOCK_SKEW_S", "SIGNATURE_HEADER", "TIMESTAMP_HEADER", "EventWebhook", "sign"]

log = logging.getLogger("flowforge.server.webhook")

SIGNATURE_HEADER = "X-FlowForge-Signature"
TIMESTAMP_HEADER = "X-FlowForge-Timestamp"
#: How far a request's timestamp may be from the server's clock, either way.
MAX_CLOCK_SKEW_S = 300
_JSON_TYPES = frozenset({"application/json", "application/cloudevents+json"})
#: The key of :attr:`ServerConfig.webhook_secrets` for namespaces without their own.
DEFAULT_SECRET_KEY = "*"
_SIGNATURE_PREFIX = "sha256="
_HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
}


def sign(secret: str, body: bytes, *, namespace: str, timestamp: int) -> str:
    """The ``X-FlowForge-Signature`` header value for ``body`` sent to ``namespace`` at
    ``timestamp`` (Unix seconds, sent as ``X-FlowForge-Timestamp``)."""
    signed = f"{timestamp}.{namespace}.".encode() + body
    return _SIGNATURE_PREFIX + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def _is_json(content_type: str) -> bool:
    return content_type in _JSON_TYPES or (content_type.startswith("application/") and content_type.endswith("+json"))


def _event_request(namespace: str, body: bytes) -> event_pb2.PublishEventRequest:
    """A PublishEventRequest from a CloudEvents JSON body (structured mode)."""
    return event_pb2.PublishEventRequest(namespace=namespace, event=parse_cloudevent(body), identity="webhook")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


class EventWebhook:
    """The HTTP endpoint ``POST /events?namespace=NS`` (default namespace ``default``)
    on the server's :class:`~flowforge.server.http.HttpListener`.

    Args:
        service: Publishes the events (the gRPC servicer's validation and path).
        secrets: Namespace → HMAC secret; the key ``"*"`` covers namespaces without
            their own. A namespace with a secret only accepts signed events.
        max_body_bytes: Larger bodies are refused with 413 (the listener's limit).
        require_signatures: Refuse unsigned events in every namespace, even one
            without a secret (the server authenticates its callers: no side door).
    """

    def __init__(
        self,
        service: WorkflowService,
        *,
        secrets: Mapping[str, str],
        max_body_bytes: int,
        require_signatures: bool = False,
    ) -> None:
        self._service = service
        self._secrets = dict(secrets)
        self._max_body_bytes = max_body_bytes
        self._require_signatures = require_signatures

    def attach(self, listener: HttpListener) -> None:
        """Serves ``POST /events`` on ``listener``."""
        listener.add_route("POST", "/events", self._post_events, what="event webhook")

    def _signature_problem(self, namespace: str, body: bytes, request: web.Request) -> str | None:
        """Why the request's signature is not acceptable; None when it is (or none is needed)."""
        secret = self._secrets.get(namespace, self._secrets.get(DEFAULT_SECRET_KEY))
        if secret is None:
            if self._require_signatures:
                return f"namespace {namespace!r} has no webhook secret, and this server accepts only signed events"
            return None
        header, stamp = request.headers.get(SIGNATURE_HEADER), request.headers.get(TIMESTAMP_HEADER, "")
        if not stamp.strip().isdigit() or abs(time.time() - int(stamp)) > MAX_CLOCK_SKEW_S:
            return (
                f"missing or stale {TIMESTAMP_HEADER}: Unix seconds within {MAX_CLOCK_SKEW_S}s of the server's clock,"
                f" signed with the body in {SIGNATURE_HEADER}"
            )
        expected = sign(secret, body, namespace=namespace, timestamp=int(stamp))
        if header is None or not hmac.compare_digest(header.strip().encode(), expected.encode()):
            return (
                f"missing or wrong {SIGNATURE_HEADER}; expected 'sha256=' + hex HMAC-SHA256 of"
                " '<timestamp>.<namespace>.' + the raw body, with the namespace's webhook secret"
            )
        return None

    async def _post_events(self, request: web.Request) -> web.Response:
        namespace = request.query.get("namespace", "default")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"the body is over the server's limit of {self._max_body_bytes} bytes")
        problem = self._signature_problem(namespace, body, request)
        if problem is not None:
            return _error(401, problem)
        if not _is_json(request.content_type):
            return _error(415, f"Content-Type {request.content_type!r} is not JSON; send application/cloudevents+json")
        try:
            response = await self._service.publish_event(_event_request(namespace, body))
        except MalformedCloudEvent as error:
            return _error(400, str(error))
        except ServiceError as error:
            return _error(_HTTP_STATUS.get(error.status, 500), error.message)
        except Exception:
            log.exception("POST /events failed")
            return _error(500, "internal error; see the server log")
        payload: dict[str, Any] = {
            "duplicate": response.duplicate,
            "workflows": [
                {"trigger_id": w.trigger_id, "workflow_id": w.workflow_id, "run_id": w.run_id, "started": w.started}
                for w in response.workflows
            ],
        }
        return web.json_response(payload, status=202)
