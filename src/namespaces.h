/* namespaces — which sessions' Python variables the gateway keeps, and which it drops.
 *
 * A session's namespace lives from its first run until the session ends, until it has been
 * idle for CODEMCP_NAMESPACE_IDLE_MS (1800000), or until room is needed: at most
 * CODEMCP_MAX_NAMESPACES (256) are kept. Room is made by dropping the least recently used
 * namespace of the SAME principal that is not running; another principal's namespace is
 * taken only once it has been idle for the idle TTL, and one in use never. When nothing may
 * be dropped the run is refused with a message. A dropped session's next run carries a note
 * ("this session's variables were discarded after N min idle") that the runtime adds to a
 * NameError. The policy is here; dropping is the drop callback's job (today the worker forgets
 * the namespace; with one interpreter per session it ends that interpreter). Sessions are
 * named by their mcp session id. Loop thread only. */
#ifndef CODEMCP_NAMESPACES_H
#define CODEMCP_NAMESPACES_H

#include <stddef.h>
#include <stdint.h>

/* Reads the limits; drop(session_id) is called for every namespace dropped here. */
void ns_init(void (*drop)(uint64_t session_id));
/* Who a session belongs to (a principal name, or a peer address without authentication);
 * sessions never named belong to "local" (stdio). Copied. */
void ns_set_principal(uint64_t session_id, const char *principal);
/* A run of the session starts. Returns 0 and sets *note to a message about variables lost
 * since the last run (static storage, "" when none), or -1 with err filled when no room can
 * be made for a new namespace. */
int ns_run_start(uint64_t session_id, const char **note, char *err, size_t errlen);
/* The run ended (any way). */
void ns_run_end(uint64_t session_id);
/* The session ended: forget it (its namespace goes with it elsewhere). */
void ns_forget(uint64_t session_id);
/* Namespaces kept now. */
size_t ns_count(void);
void ns_free_all(void);

#endif
