/* audit — the audit log: one JSON line per tool call decision, and one per program the
 * pre-flight validation refused or whose execute_python arguments the gateway refused
 * (CODEMCP_AUDIT_LOG: a file or "syslog").
 *
 * A tool call's line is written when the call ends: refused (by the run check, the catalog,
 * policy, a budget, mutation enforcement or a byte cap), stubbed by a dry run, answered,
 * failed, or cancelled with its run or its worker. It names who (principal, session, run),
 * what (server, tool, function, read or write), the decision and the policy rule or engine
 * that made it, and how it ended (outcome, duration). Of the arguments only the top-level
 * keys are written; their values only with CODEMCP_AUDIT_ARGS=1, redacted (redact.h). Every
 * string is JSON-escaped and the line is ASCII, so nothing a program or an upstream sends can
 * end a line or start another. Loop thread only. */
#ifndef CODEMCP_AUDIT_H
#define CODEMCP_AUDIT_H

#include "calls.h"

#include <stddef.h>
#include <stdint.h>

/* dest: CODEMCP_AUDIT_LOG (NULL or empty: no audit log); with_args: CODEMCP_AUDIT_ARGS. After
 * lp_init. 0, or -1 with err when the destination cannot be opened. */
int audit_init(const char *dest, int with_args, char *err, size_t errlen);
/* Whether lines are written (callers skip building one when not). */
int audit_enabled(void);
/* A call_event observer (calls_observe): the call's line. */
void audit_tool_call(const struct call_event *c);
/* A program refused before it ran: by the worker's pre-flight validation (kind "validation",
 * run: its id), or its execute_python arguments by the gateway (kind "invalid_arguments", run
 * NULL: none was made). error: the message the client was given. */
void audit_validation(const char *principal, uint64_t session, const char *run, const char *kind,
                      const char *error);
/* SIGHUP: the file is opened again (rotation). */
void audit_reopen(void);
/* Writes what is queued and closes the log. */
void audit_close(void);

#endif
