"""The limits shared by the gateway (C), the worker host (C) and this runtime (Python).

Data only: src/common/gen_limits.py turns these values into src's codemcp_limits.h at build time (as
LIM_<NAME>), and this runtime imports them, so a value is written once and the sides cannot
drift apart. Each value is a plain number (the generator reads the file with
ast.literal_eval, never imports it)."""

# Extra seconds a tool call waits beyond its timeout_ms before the worker gives up on it
# locally: the gateway answers "timeout" at timeout_ms, and this covers an answer that is
# never delivered. Used by client.py's calls and by their C twin (src/worker/pycall.c).
CALL_GRACE_S = 10.0

# The output and result caps of a run whose request names none (the gateway always sends its
# CODEMCP_MAX_OUTPUT_BYTES): the worker's C request reader (src/worker/pyreq.c) and runner.py.
RUN_DEFAULT_MAX_BYTES = 1048576  # 1 MiB

# The longest line kept from a child's captured output (a worker's, the prototype's or an
# upstream's stdout/stderr lines sent to the log); a longer line is dropped whole.
CAPTURED_LINE_MAX = 65536  # 64 KiB

# The longest JSON-RPC message the gateway reads from an upstream (a stdio line, an HTTP
# body or SSE event); a longer one is dropped with a warning.
UPSTREAM_MESSAGE_MAX = 268435456  # 256 MiB
