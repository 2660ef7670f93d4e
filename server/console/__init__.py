"""The operations console (docs/console.md): a JSON API over the gRPC handlers and the
static pages that use it, served on the HTTP listener of every server process."""

from flowforge.server.console.oidc import ConsoleOidc
from flowforge.server.console.routes import Console

__all__ = ["Console", "ConsoleOidc"]
