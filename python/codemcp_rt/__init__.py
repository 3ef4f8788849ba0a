"""codemcp_rt — the Python runtime that runs agent code inside a codemcp worker.

The worker host (C, embedding CPython) imports this package from source strings
compiled into the binary; the same files also import from the filesystem (tests,
development). Modules therefore never use ``__file__`` or read files next to them.

Modules:
    errors      ToolError (a failed tool call) and RunInterrupted (timeout/cancel)
    transport   the object that talks to the gateway (the ``_codemcp`` C module)
    runstate    the state of the run executing now (trace, mutations, open calls)
    pending     Pending (a call in flight), gather/settle, resolve
    client      call(): send one call_tool request, unwrap its reply
    capture     per-run stdout/stderr capture with a byte cap
    jsonsafe    turn any Python value into valid, size-capped JSON
    content     Content: image, audio and resource blocks, in from tools and out to the client
    sdk         load/swap the generated SDK module
    discovery   search_tools() and describe() over the current SDK
    runner      run(params) -> the result envelope
    worker_main the request loop of the worker process
"""

__all__ = [
    "errors",
    "transport",
    "runstate",
    "pending",
    "client",
    "capture",
    "jsonsafe",
    "content",
    "sdk",
    "discovery",
    "runner",
    "worker_main",
]
