"""Server-side caches: the async ``ServerCache`` protocol, an in-memory cache and Redis.

``ResponseCache`` (in :mod:`procflow.processors`) stores model answers in any ``ServerCache``;
``CostGuardProcessor`` keeps its spend in a ``CounterStore``. Both backends here never pickle: values
are JSON (or msgpack) data, and a backend failure is a :class:`~procflow.errors.CacheError`.
"""

from procflow._public import publish as _publish
from procflow.cache._codec import Serializer
from procflow.cache._counters import CounterStore, InMemoryCounterStore, RedisCounterStore
from procflow.cache._memory import InMemoryServerCache
from procflow.cache._protocol import ServerCache
from procflow.cache._redis import DEFAULT_REDIS_TIMEOUT, RedisCache

__all__ = [
    "DEFAULT_REDIS_TIMEOUT",
    "CounterStore",
    "InMemoryCounterStore",
    "InMemoryServerCache",
    "RedisCache",
    "RedisCounterStore",
    "Serializer",
    "ServerCache",
]

_publish(__name__, globals(), __all__)
