/* audit_sink — the audit log's destination (audit_sink.c): a file appended to, or syslog,
 * written by a thread of its own behind a bounded queue. Lines that do not fit, or that a
 * write loses, are counted and reported in the ordinary log. Used by audit.c only. */
#ifndef CODEMCP_AUDIT_SINK_H
#define CODEMCP_AUDIT_SINK_H

#include <stddef.h>

/* dest: "syslog", or the path of a file (created with mode 0600). Starts the writer thread
 * (call after lp_init: it inherits the loop's blocked signals). 0, or -1 with err. */
int audit_sink_open(const char *dest, char *err, size_t errlen);
/* Queues one line (len bytes, no newline; the sink adds it). Never blocks on the disk. */
void audit_sink_put(const char *line, size_t len);
/* Opens the file's path again (SIGHUP: the file was rotated). Nothing for syslog. */
void audit_sink_reopen(void);
/* Writes what is queued, stops the thread, closes the destination. */
void audit_sink_close(void);

#endif
