/* serve_stdio — the MCP front over stdin/stdout (newline-delimited JSON-RPC).
 *
 * stdin and stdout are duplicated to high descriptors and /dev/null is put on fds 0 and
 * 1, so no stray write (ours, a library's) can corrupt the MCP stream, and a new socket
 * can never take those numbers. One session lives as long as stdin is open. */
#ifndef CODEMCP_SERVE_STDIO_H
#define CODEMCP_SERVE_STDIO_H

/* Starts serving; on_eof() is called once when stdin closes. 0 / -1. */
int stdio_serve(void (*on_eof)(void));
/* Bytes of MCP output not yet written to stdout. */
unsigned long stdio_pending_output(void);
/* Ends the session (runs cancelled). */
void stdio_close(void);

#endif
