"""The clients: :class:`MemoryClient` (blocking) and :class:`AsyncMemoryClient` (asyncio), one
surface over the ``/v1`` API of ``memory serve``.

Both build every request, resend and read every answer in one place (``_core``); they differ
only in how a request is sent and how they wait before sending it again. The asyncio client is
written once (``_client_async.py``) and the blocking one generated from it by
scripts/unasync.py (``_client_sync.py``), so the two cannot drift apart.
"""

from . import _client_async, _client_sync

# The parts besides the clients are reachable here as before, though not in __all__.
from ._client_async import AsyncDirectory as AsyncDirectory
from ._client_async import AsyncDocuments as AsyncDocuments
from ._client_async import AsyncHistory as AsyncHistory
from ._client_async import AsyncIdentities as AsyncIdentities
from ._client_async import AsyncMemoryClient
from ._client_async import AsyncNotes as AsyncNotes
from ._client_sync import Directory as Directory
from ._client_sync import Documents as Documents
from ._client_sync import History as History
from ._client_sync import Identities as Identities
from ._client_sync import MemoryClient
from ._client_sync import Notes as Notes

__all__ = ["AsyncMemoryClient", "MemoryClient"]

# Shown as this module's (in reprs and generated docs), where they were before the split.
for _module in (_client_async, _client_sync):
    for _name in _module.__all__:
        getattr(_module, _name).__module__ = __name__
