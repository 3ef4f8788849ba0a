/* Unit test for src/run/run_params.c: the run request's params text is byte for byte what
 * rpc_dump gave for the tree runs.c built before (members set one by one, in this order; a
 * string that is not UTF-8 left out), for plain and awkward values. */
#include "check.h"
#include "jsonfast.h"
#include "run_params.h"

#include <stdlib.h>
#include <string.h>

/* The tree the old send_run built (its json_object_set* calls, in order). */
static char *old_text(const struct run_params *p)
{
    json_t *t = json_object();
    json_object_set_new(t, "run_id", json_string(p->run_id));
    json_object_set_new(t, "namespace", json_string(p->ns_key));
    json_object_set_new(t, "code", json_string(p->code));
    json_object_set_new(t, "timeout_ms", json_integer((json_int_t)p->timeout_ms));
    json_object_set_new(t, "dry_run", json_boolean(p->dry_run));
    json_object_set(t, "allow_mutations", p->allow_mutations);
    json_object_set_new(t, "enforce_mutations", json_boolean(p->enforce_mutations));
    json_object_set_new(t, "max_output_bytes", json_integer((json_int_t)p->max_output_bytes));
    json_object_set_new(t, "max_result_bytes", json_integer((json_int_t)p->max_output_bytes));
    json_object_set_new(t, "reset", json_boolean(p->reset));
    json_object_set_new(t, "validate", json_boolean(p->validate));
    if (json_array_size(p->disabled))
        json_object_set(t, "disabled", p->disabled);
    if (json_array_size(p->unavailable))
        json_object_set(t, "unavailable", p->unavailable);
    if (p->namespace_note && *p->namespace_note)
        json_object_set_new(t, "namespace_note", json_string(p->namespace_note));
    json_object_set_new(t, "namespace_fresh", json_boolean(p->namespace_fresh));
    if (p->drop_namespaces)
        json_object_set(t, "drop_namespaces", p->drop_namespaces);
    char *s = jf_dumps(t);
    json_decref(t);
    return s;
}

static int same(const struct run_params *p)
{
    size_t n;
    char *a = run_params_text(p, &n), *b = old_text(p);
    int ok = a && b && strlen(a) == n && strcmp(a, b) == 0;
    if (!ok)
        fprintf(stderr, "  new %s\n  old %s\n", a ? a : "(null)", b ? b : "(null)");
    free(a);
    free(b);
    return ok;
}

static void test_same_bytes(void)
{
    json_t *allow = json_pack("[s,s]", "github/create_issue", "caf\xc3\xa9*");
    json_t *off = json_pack("[s]", "x/y"), *none = json_array();
    json_t *drops = json_pack("[s,s]", "n1", "n2");
    struct run_params p = {.run_id = "r-1",
                           .ns_key = "n7",
                           .code = "result = 1",
                           .timeout_ms = 30000,
                           .max_output_bytes = 1 << 20,
                           .validate = 1,
                           .namespace_fresh = 1};
    EXPECT(same(&p));
    p.code = "print(\"q\\\\ \xe2\x82\xac\")\n\tx = '\x01\x1f'\n"; /* escapes, UTF-8, controls */
    p.allow_mutations = allow;
    p.dry_run = p.reset = p.enforce_mutations = 1;
    p.disabled = off;
    p.unavailable = none;
    p.namespace_note = "the namespace was reset";
    p.drop_namespaces = drops;
    p.timeout_ms = -5;
    EXPECT(same(&p));
    p.code = "bad \xff utf-8"; /* not UTF-8: left out, as json_object_set_new(.., NULL) did */
    p.namespace_note = "";
    p.ns_key = "smoke";
    EXPECT(same(&p));
    p.run_id = "\xc3"; /* a first member that is left out: no stray comma */
    EXPECT(same(&p));
    json_decref(allow);
    json_decref(off);
    json_decref(none);
    json_decref(drops);
}

int main(void)
{
    check_case("run params: the bytes of the old tree, member by member", test_same_bytes);
    return CHECK_DONE();
}
