"""``procflow serve``: an OpenAI-compatible guard gateway in front of any model.

Build the app with :func:`create_app` from a :class:`GatewayConfig` and serve it with any ASGI server
(``procflow serve`` uses uvicorn). Needs the ``server`` extra: ``pip install 'procflow[server]'``.
"""

from procflow._public import publish as _publish
from procflow.server._app import Gateway, create_app
from procflow.server._background import serve_in_background
from procflow.server._config import GatewayConfig, TripwireResponse, load_api_keys, resolve_upstream
from procflow.server._metrics import GatewayMetrics
from procflow.server._wire import TRIPWIRE_ERROR_CODE

__all__ = [
    "TRIPWIRE_ERROR_CODE",
    "Gateway",
    "GatewayConfig",
    "GatewayMetrics",
    "TripwireResponse",
    "create_app",
    "load_api_keys",
    "resolve_upstream",
    "serve_in_background",
]

_publish(__name__, globals(), __all__)
