"""Errors the engine raises; the frontend maps each to its gRPC status."""

from __future__ import annotations

import grpc

__all__ = [
    "AlreadyExists",
    "DeadlineExceeded",
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "ServiceError",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
]


class ServiceError(Exception):
    """An error with a gRPC status and a message a person can act on."""

    status: grpc.StatusCode = grpc.StatusCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(ServiceError):
    status = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(ServiceError):
    status = grpc.StatusCode.NOT_FOUND


class AlreadyExists(ServiceError):
    status = grpc.StatusCode.ALREADY_EXISTS


class FailedPrecondition(ServiceError):
    status = grpc.StatusCode.FAILED_PRECONDITION


class ResourceExhausted(ServiceError):
    """Over a quota or limit; the message names it and says when to retry."""

    status = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(ServiceError):
    status = grpc.StatusCode.UNAVAILABLE


class Unimplemented(ServiceError):
    status = grpc.StatusCode.UNIMPLEMENTED


class DeadlineExceeded(ServiceError):
    status = grpc.StatusCode.DEADLINE_EXCEEDED


class Unauthenticated(ServiceError):
    """Missing or bad credentials."""

    status = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(ServiceError):
    """Valid credentials that do not allow this call (in this namespace)."""

    status = grpc.StatusCode.PERMISSION_DENIED
