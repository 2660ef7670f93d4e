"""Azure integrations (``pip install 'flowforge[azure]'``).

- :class:`AzureBlobPayloadStorage`: payload storage in an Azure Blob Storage container.

See docs/payloads.md ("Azure setup").
"""

from flowforge.contrib.azure._blob import AzureBlobPayloadStorage

__all__ = ["AzureBlobPayloadStorage"]
