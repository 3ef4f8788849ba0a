/* Unit tests for src/catalog/toolstate.c: effective state = session override, else default, else
 * on; the enforcement predicate; the effective `tools` config handed to sdkgen. No upstreams are
 * registered here, so every config default is "on". */
#include "toolstate.h"

#include "check.h"

#include <string.h>

int main(void)
{
    CHECK(ts_enabled("s", "t") == 1 && ts_session("s", "t") == -1, "on by default, no override");
    ts_set_session("s", "t", 0);
    CHECK(ts_enabled("s", "t") == 0 && ts_session("s", "t") == 0 && ts_default_on("s", "t"),
          "a session override turns it off; the default stays on");
    CHECK(ts_enabled("s", "u") == 1 && ts_enabled("s2", "t") == 1, "other tools unaffected");
    char why[300] = "";
    CHECK(!ts_call_allowed("s", "t", why, sizeof(why)) &&
              strstr(why, "codemcp enable-tool s t") != NULL,
          "the predicate refuses it and names the command (%s)", why);
    CHECK(ts_call_allowed("s", "u", why, sizeof(why)), "and allows the others");

    json_t *tools = json_pack("[{s:s}, {s:s}, {s:s}]", "name", "t", "name", "u", "name", "v");
    json_t *cfg = json_pack("{s:{s:b}, s:{s:b}}", "u", "mutation", 1, "v", "enabled", 0);
    json_t *eff = ts_effective_config("s", cfg, tools);
    CHECK(json_is_false(json_object_get(json_object_get(eff, "t"), "enabled")),
          "effective config: the session-off tool is enabled: false");
    CHECK(json_is_true(json_object_get(json_object_get(eff, "u"), "mutation")) &&
              !json_object_get(json_object_get(eff, "u"), "enabled"),
          "other keys of the config are kept, nothing added to tools left on");
    CHECK(json_is_true(json_object_get(json_object_get(eff, "v"), "enabled")),
          "v: the config says off but no upstream is registered, so its default is on here");
    CHECK(!json_object_get(json_object_get(cfg, "t"), "enabled"), "the config itself is untouched");
    json_decref(eff);

    ts_set_session("s", "t", 1);
    CHECK(ts_enabled("s", "t") == 1 && ts_session("s", "t") == 1, "session on");
    ts_set_default("s", "t", 0);
    CHECK(ts_enabled("s", "t") == 0 && ts_session("s", "t") == -1 && !ts_default_on("s", "t"),
          "a new default clears the session override");
    ts_set_session("s", "t", -1);
    CHECK(ts_enabled("s", "t") == 0, "clearing an absent override keeps the default");
    json_t *only_u = json_pack("[{s:s}]", "name", "u");
    json_t *none = ts_effective_config("s", NULL, only_u);
    CHECK(none == NULL, "nothing to say: NULL");
    json_decref(only_u);
    json_decref(tools);
    json_decref(cfg);
    ts_free();
    CHECK(ts_enabled("s", "t") == 1, "after ts_free everything is back to the defaults");
    return CHECK_DONE();
}
