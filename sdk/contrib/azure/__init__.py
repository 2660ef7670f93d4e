"""Azure integrations (``pip install 'flowforge[azure]'``).

- :class:`AzureBlobPayloadStorage`: payload storage in an Azure Blob Storage container.
- :class:`ServiceBusEventSource`: CloudEvents from a Service Bus queue or subscription
  start workflows through FlowForge's event triggers.
- :class:`ServiceBusLifecyclePublisher`: workflow lifecycle events from the store's
  outbox to a Service Bus topic.

See docs/payloads.md ("Azure setup").
"""

from flowforge.contrib.azure._blob import AzureBlobPayloadStorage
from flowforge.contrib.azure._event_source import ServiceBusEventSource
from flowforge.contrib.azure._lifecycle_publisher import ServiceBusLifecyclePublisher

__all__ = ["AzureBlobPayloadStorage", "ServiceBusEventSource", "ServiceBusLifecyclePublisher"]
