"""Azure integrations (``pip install 'flowforge[azure]'``).

- :class:`AzureBlobPayloadStorage`: payload storage in an Azure Blob Storage container.
- :class:`ServiceBusEventSource`: CloudEvents from a Service Bus queue or subscription
  start workflows through FlowForge's event triggers.

See docs/payloads.md ("Azure setup").
"""

from flowforge.contrib.azure._blob import AzureBlobPayloadStorage
from flowforge.contrib.azure._event_source import ServiceBusEventSource

__all__ = ["AzureBlobPayloadStorage", "ServiceBusEventSource"]
