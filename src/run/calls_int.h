/* calls_int.h — what calls.c shares with calls_read.c: the hooks, the replies to a worker and
 * the per-principal holds (argument bytes and reads in flight). Not for other modules. */
#ifndef CODEMCP_CALLS_INT_H
#define CODEMCP_CALLS_INT_H

#include "calls.h"

#include <stddef.h>
#include <stdint.h>

extern struct calls_hooks calls__hooks;

/* What a principal's calls hold: argument bytes (in flight or waiting), resource reads in
 * flight, and the worker connections its results were queued to that had not written them
 * all yet when last looked at (their unwritten bytes are what its results hold). */
#define HELD_CONNS 16
struct principal_hold {
    char *principal;
    size_t bytes;
    int reads;
    int n_conns;
    uint64_t conns[HELD_CONNS];
    struct principal_hold *next;
};
struct principal_hold *calls__held_find(const char *principal);
struct principal_hold *calls__held_get(const char *principal);
/* Frees h when it holds nothing and enough others are kept. */
void calls__held_drop_idle(struct principal_hold *h);

/* msg (stolen) to the worker on conn_id: as the reply hooks return (CALLS_TOO_LARGE...). */
int calls__reply(uint64_t conn_id, json_t *msg);
void calls__reply_error(uint64_t conn_id, json_t *id, const char *kind, const char *message,
                        int64_t elapsed_ms);
/* A result longer than the worker reads (what: whose result): kind "too_large". */
void calls__reply_too_large(uint64_t conn_id, json_t *id, const char *what, size_t len,
                            int64_t elapsed_ms);

/* calls_read.c: the reads of run run_id (else of connection conn_id) are given up; the run's
 * are answered with kind "timeout" and reason. */
void calls__reads_cancel(const char *run_id, uint64_t conn_id, const char *reason);
void calls__reads_free_all(void);

#endif
