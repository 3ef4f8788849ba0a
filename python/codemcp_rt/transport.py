"""Which object talks to the gateway.

In the worker this is the ``_codemcp`` C module built into codemcp-worker (see
docs/pymod-api.md). Tests install any object with the same methods:

    send(text)                       queue one JSON-RPC frame for the gateway
    next_request(timeout=None)       next gateway request (raw JSON text) or None
    wait_reply(id, timeout=None)     raw reply for our call id, None on timeout
    take_reply(id)                   non-blocking wait_reply
    forget(id)                       drop a reply now or when it arrives
    set_current_run(run_id)          which run a `cancel` may interrupt
    interrupt_reason()               pending interrupt reason ("timeout"/"cancelled"), cleared
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_transport: Any = None


def set_transport(obj: Any) -> None:
    """Use ``obj`` as the transport from now on (None: back to the default)."""
    global _transport
    with _lock:
        _transport = obj


def get_transport() -> Any:
    """The transport in use; by default the ``_codemcp`` module when it is importable.

    Raises RuntimeError when there is none (plain python without the worker host).
    """
    global _transport
    with _lock:
        if _transport is None:
            try:
                import _codemcp  # type: ignore[import-not-found]
            except ImportError:
                raise RuntimeError(
                    "codemcp_rt: no transport (not running inside codemcp-worker; "
                    "call codemcp_rt.transport.set_transport())"
                ) from None
            _transport = _codemcp
        return _transport
