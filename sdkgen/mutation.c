/* mutation — decides whether an upstream tool reads or writes.
 *
 * The decision feeds dry-run stubbing and mutation enforcement in the gateway and the
 * `mutation` flag of the generated SDK, so there is exactly one implementation, here.
 * Priority: explicit config, then the server's own annotations, then the verbs in the tool's
 * name. The verb lists live in python/codemcp_rt/verbs.py (the original codemcp's, kept
 * identical so configurations behave the same after a migration), which search_tools ranks
 * with too; sdkgen/gen_verbs.py makes mutation_verbs.h from it at build time. Pure: no I/O. */
#include "sdkgen.h"
#include "sdkgen_int.h"
#include "mutation_verbs.h" /* sdk_read_verbs, sdk_write_verbs, sdk_strong_write_verbs */

#include <string.h>

static int sdk_in_list(const char *const *list, const char *word)
{
    for (; *list; list++)
        if (strcmp(*list, word) == 0)
            return 1;
    return 0;
}

int sdk_tool_is_write(const char *tool_name, json_t *annotations, json_t *tool_config)
{
    json_t *v = json_object_get(tool_config, "mutation");
    if (json_is_boolean(v))
        return json_is_true(v);
    if (json_is_true(json_object_get(annotations, "readOnlyHint")))
        return 0;
    if (json_is_true(json_object_get(annotations, "destructiveHint")))
        return 1;

    struct buf b = {0};
    size_t words = words_split(tool_name ? tool_name : "", &b);
    int write = 0;
    if (words > 0) {
        const char *w = b.data;
        if (sdk_in_list(sdk_read_verbs, w)) {
            write = 0;
        } else if (sdk_in_list(sdk_write_verbs, w)) {
            write = 1;
        } else {
            for (size_t k = 0; k < words && !write; k++, w += strlen(w) + 1)
                write = sdk_in_list(sdk_strong_write_verbs, w);
        }
    }
    buf_free(&b);
    return write;
}
