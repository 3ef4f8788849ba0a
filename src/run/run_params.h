/* run_params — the params of the `run` request to a worker, written as JSON text in one pass
 * (no jansson tree per execute). The bytes are those rpc_dump gave for the tree runs.c used
 * to build: the same members in the same order, a member whose value cannot be written (a
 * string that is not UTF-8) left out as json_object_set_new(.., NULL) left it out. Pure: no
 * state, no I/O. */
#ifndef CODEMCP_RUN_PARAMS_H
#define CODEMCP_RUN_PARAMS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct run_params {
    const char *run_id, *ns_key, *code;
    int64_t timeout_ms;
    int dry_run;
    json_t *allow_mutations; /* borrowed; NULL: left out */
    int enforce_mutations;
    int64_t max_output_bytes; /* also sent as max_result_bytes */
    int reset, validate;
    json_t *disabled, *unavailable; /* borrowed; left out when empty or NULL */
    const char *namespace_note;     /* NULL or "": left out */
    int namespace_fresh;
    json_t *drop_namespaces; /* borrowed; NULL: left out */
    json_t *policy;          /* borrowed; the rules for the pre-flight check, NULL: left out */
};

/* The params object's text (NUL-terminated, *len bytes); caller frees. */
char *run_params_text(const struct run_params *p, size_t *len);

#endif
