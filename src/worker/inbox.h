/* inbox — the gateway's messages held for the Python side, and the run interrupt state.
 *
 * Holds replies to our call_tool requests by id (or notes that nobody wants one any more),
 * gateway requests in arrival order, the run executing on the main thread with its pending
 * interrupt reason, and cancels that came before their run started. A plain data
 * structure: not thread-safe, wsclient serialises every call under its lock — except
 * inb_classify(), which reads no state and so runs without it. Never touches Python. */
#ifndef CODEMCP_INBOX_H
#define CODEMCP_INBOX_H

#include <stddef.h>

enum { INB_REQUEST, INB_REPLY, INB_CANCEL, INB_DROP };

/* One complete text message from the gateway, classified. */
struct inb_msg {
    struct inb_msg *next; /* for the reader's batches */
    int kind;
    char *text; /* NUL-terminated */
    size_t len;
    char *id;     /* INB_REPLY: the JSON-RPC id as a string ("7" for the integer 7) */
    char *run_id; /* INB_CANCEL */
    const char *reason;
};

/* Classifies text[0..len) (NUL-terminated, ownership taken) into a new message:
 *   INB_REPLY   no "method", an "id", and "result" or "error";
 *   INB_CANCEL  "method": "cancel" with params.run_id (reason: "timeout" or "cancelled");
 *   INB_DROP    a reply without a usable id, or a cancel without a run id (logged);
 *   INB_REQUEST everything else, unparseable text included (the runtime answers it).
 * Scans the top level of the object without building it (a 10 MiB reply costs a memchr
 * over its strings); odd input falls back to jansson. Never fails (aborts on OOM). */
struct inb_msg *inb_classify(char *text, size_t len);

/* Frees a message and whatever it still owns. */
void inb_msg_free(struct inb_msg *m);

/* Stores m (ownership taken): a reply into the table (or dropped if forgotten), a request
 * into the queue, a cancel into the interrupt state. Returns 1 when the main thread must
 * be interrupted now (a cancel for the current run, at most once per run). */
int inb_store(struct inb_msg *m);

/* Next gateway request: 1 with *text (caller frees) and *len, or 0. */
int inb_take_request(char **text, size_t *len);
/* The reply for id: 1 with *text (caller frees) and *len, removed from the table; or 0. */
int inb_take_reply(const char *id, char **text, size_t *len);
/* Drops the reply for id now, or when it arrives later unless `closed` (it never will). */
void inb_forget(const char *id, int closed);

/* Sets the run executing on the main thread (NULL: none) and clears any pending reason.
 * Returns 1 when that run was cancelled before it started (interrupt it now). */
int inb_set_current_run(const char *run_id);
/* The connection is gone: interrupts the current run ("cancelled"). Returns 1 if the main
 * thread must be signalled. */
int inb_lost(void);
/* Pending interrupt reason (caller frees) or NULL; cleared by the call. */
char *inb_take_reason(void);

/* Frees everything. */
void inb_clear(void);

#endif
