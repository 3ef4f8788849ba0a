/* config_default — a server's or a tool's default written to mcp.json and to the loaded
 * entry at once (`codemcp enable|disable … --make-default`).
 *
 * The config module owns struct cfg and its entries: the admin commands ask here, so the file
 * and what the gateway holds of it (entry, enabled, tools) never disagree, and nobody else
 * writes into a loaded entry. The file is edited in place (cfgedit.c keeps comments and
 * layout); the spelling of an existing entry is kept ("disabled": true in Claude Desktop or
 * Cursor style files). Loop thread only. */
#include "config.h"
#include "cfgedit.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

static const char *root_key(const struct cfg *c)
{
    return c && strcmp(c->format, "mcpServers") == 0 ? "mcpServers" : "mcp";
}

/* Writes keys = value into c's file; *wrote says whether the file changed. 0 / -1 + why. */
static int write_default(const struct cfg *c, const char *const *keys, size_t n, json_t *value,
                         int *wrote, char *why, size_t wn)
{
    *wrote = 0;
    if (!c || !c->path || strcmp(c->format, "wrap") == 0 || strcmp(c->format, "none") == 0) {
        snprintf(why, wn,
                 "this gateway has no mcp.json to write (started with --wrap or "
                 "without a config file); the change was not made");
        return -1;
    }
    if (ce_set_in_file(c->path, keys, n, value, wrote, why, wn) < 0) {
        log_warn("admin", "--make-default: %s", why);
        return -1;
    }
    if (*wrote)
        log_info("admin", "wrote %s (previous contents in %s.bak)", c->path, c->path);
    return 0;
}

int cfg_set_server_default(struct cfg *c, struct cfg_server *s, int on, int *wrote, char *why,
                           size_t wn)
{
    json_t *entry = s->entry;
    const char *key = "enabled";
    int value = on;
    *wrote = 0;
    if (!json_object_get(entry, "enabled") &&
        (json_object_get(entry, "disabled") || strcmp(root_key(c), "mcpServers") == 0)) {
        key = "disabled"; /* the spelling of Claude Desktop / Cursor style files */
        value = !on;
    }
    if (on && !json_object_get(entry, "enabled") &&
        !json_is_true(json_object_get(entry, "disabled")))
        goto done; /* on is the default already: nothing to write */
    const char *keys[] = {root_key(c), s->name, key};
    json_t *v = json_boolean(value);
    int rc = write_default(c, keys, 3, v, wrote, why, wn);
    json_decref(v);
    if (rc < 0)
        return -1;
    json_object_set_new(entry, key, json_boolean(value));
done:
    s->enabled = on;
    return 0;
}

int cfg_set_tool_default(struct cfg *c, struct cfg_server *s, const char *tool, int on, int *wrote,
                         char *why, size_t wn)
{
    json_t *tools = json_object_get(s->entry, "tools");
    json_t *conf = json_object_get(tools, tool);
    *wrote = 0;
    if (on && !json_object_get(conf, "enabled"))
        return 0; /* on is the default */
    const char *keys[] = {root_key(c), s->name, "tools", tool, "enabled"};
    json_t *v = json_boolean(on);
    int rc = write_default(c, keys, 5, v, wrote, why, wn);
    json_decref(v);
    if (rc < 0)
        return -1;
    if (!json_is_object(tools)) { /* keep the loaded entry in step with the file */
        tools = json_object();
        json_object_set_new(s->entry, "tools", tools);
    }
    if (!json_is_object(conf)) {
        conf = json_object();
        json_object_set_new(tools, tool, conf);
    }
    json_object_set_new(conf, "enabled", json_boolean(on));
    return 0;
}
