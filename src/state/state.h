/* state — optional shared state for a fleet of gateways, in Redis (CODEMCP_STATE=
 * redis://[:password@]host[:port][/db]; unset: every module keeps its own files and memory).
 *
 * What is shared lives with the module that owns it (OAuth credentials in oauth_state.c,
 * learned shapes in shapes_fleet.c, call counts in usage_fleet.c, budget counts in
 * policy_budget_fleet.c, bearer tokens in http_auth_fleet.c, admin changes in admin_fleet.c);
 * this module only moves bytes and says whether Redis is reachable:
 *   - a writer thread runs queued commands on its own connection (a bounded queue: the loop
 *     never waits for Redis; a command refused or lost while Redis is down is made good by
 *     the owners' resync, state_on_connect);
 *   - a subscriber thread holds one SUBSCRIBE connection and hands other replicas' messages
 *     to the loop (lp_post); when Redis goes away it reconnects every half second, and each
 *     time it is back every state_on_connect hook runs: owners push what they changed
 *     meanwhile and pull what the others did;
 *   - helper threads that must wait (an OAuth refresh waiting for another replica's lock) open
 *     a blocking connection of their own (state_conn_*).
 * Why threads and not hiredis's async API on the loop: the loop hands out readable-only
 * descriptors (loop.h) and Redis traffic here is rare and off the hot path (execute_python
 * never waits for it: owners cache locally and update from messages), so two threads cost
 * less than teaching the loop write readiness; OAuth already refreshes on helper threads.
 * state_cmd, state_publish, state_store_ok and state_conn_* may be called from any thread; the
 * rest is loop thread only. Nothing here logs a value: values can be credentials. */
#ifndef CODEMCP_STATE_H
#define CODEMCP_STATE_H

#include <jansson.h>
#include <stddef.h>

/* url: CODEMCP_STATE (NULL or "" or "files": off). Starts the threads after lp_init. 0, or -1
 * for a URL it cannot use (logged; the gateway then refuses to start rather than run a fleet
 * member with private state). */
int state_init(const char *url);
/* 1 when CODEMCP_STATE names a store (reachable or not). */
int state_enabled(void);
/* For readiness: 1 when no store is configured or it is reachable; 0 with why (what is
 * unreachable and since when, no password) when the gateway is serving from its last known
 * state (why may be NULL). Any thread. */
int state_store_ok(char *why, size_t n);
/* At exit, after the loop stopped: runs what is queued (up to 2 s) and ends the threads. */
void state_stop(void);

/* "codemcp:<suffix>" (every key of ours has the prefix). */
const char *state_key(char *buf, size_t n, const char *suffix);

/* Queues one command (argv and lengths copied; lens NULL: C strings). cb (may be NULL) gets
 * the reply on the loop as JSON (strings, integers, null, arrays; a Redis error as
 * {"error": text}) or NULL when Redis could not be reached; it owns the reply. -1 when nothing
 * was queued (store off or unreachable, queue full): cb is not called. Commands still queued
 * at exit get cb(ud, NULL) from state_stop (with state_enabled() already 0), so that what ud
 * owns is freed. */
typedef void (*state_reply_fn)(void *ud, json_t *reply);
int state_cmd(state_reply_fn cb, void *ud, int argc, const char **argv, const size_t *lens);
/* Tells every other replica: msg (borrowed) with "topic" added. -1 when not sent. */
int state_publish(const char *topic, json_t *msg);
/* fn(msg) on the loop for each message of topic from another replica (msg borrowed). */
void state_on_message(const char *topic, void (*fn)(json_t *msg));
/* fn() on the loop each time the store becomes reachable (the first time and after each
 * outage), before any message that arrives on that connection. */
void state_on_connect(void (*fn)(void));
/* fn() at the start of state_stop (main thread, the loop stopped): queue the last writes. */
void state_on_stop(void (*fn)(void));

/* ---- blocking, for helper threads only (never the loop) ---- */
struct state_conn;
/* A connection of the calling thread's own, or NULL (unreachable: logged by the caller). */
struct state_conn *state_conn_open(void);
/* One command; the reply as for state_cmd (new reference) or NULL on an I/O error. */
json_t *state_conn_cmd(struct state_conn *c, int argc, const char **argv, const size_t *lens);
/* A lock owned by token: SET key token NX PX ttl_ms. 1 taken, 0 held by another, -1 error. */
int state_lock_take(struct state_conn *c, const char *key, const char *token, long ttl_ms);
/* Releases it only if token still owns it (a lock that expired and was taken by another
 * replica stays theirs). */
void state_lock_release(struct state_conn *c, const char *key, const char *token);
void state_conn_close(struct state_conn *c);

/* A lock held as a lease (state_lease.c): taken like state_lock_take for lease_ms, then kept
 * alive by a thread of its own that renews it every lease_ms / 3 for as long as its holder
 * lives, so a holder that dies (SIGKILL, a lost host) frees it within lease_ms while one that
 * works for longer than that keeps it. */
struct state_lease;
/* 1 and *out set: taken; 0 held by another; -1 error. c stays the caller's. */
int state_lease_take(struct state_conn *c, const char *key, const char *token, long lease_ms,
                     struct state_lease **out);
/* Stops renewing and releases the lock if it is still ours (over c). NULL: nothing. */
void state_lease_end(struct state_conn *c, struct state_lease *l);

#endif
