/* policy — see policy.h. The per-tool and per-server lists are read here from the config as
 * it is; the ordered rules are compiled by policy_rules.c. */
#include "policy_int.h"
#include "log.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

static const struct cfg *config;

void policy_init(const struct cfg *cfg)
{
    config = cfg;
    size_t n = rules_load(json_object_get(cfg->root, "policy"), cfg->path);
    budgets_load(json_object_get(cfg->root, "budgets"), cfg->path);
    if (n)
        log_info("policy", "%zu policy rule%s loaded", n, n == 1 ? "" : "s");
}

/* Matches name against a rule list. Returns 1 on a match (pattern in *hit), 0 when none,
 * -1 when the list is malformed. */
static int match_list(json_t *list, const char *name, const char **hit)
{
    if (!list)
        return 0;
    if (!json_is_array(list))
        return -1;
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p)
    {
        if (!json_is_string(p))
            return -1;
        if (fnmatch(json_string_value(p), name, 0) == 0) {
            *hit = json_string_value(p);
            return 1;
        }
    }
    return 0;
}

/* Evaluates one allow/deny object. Returns 1 allow, 0 deny, -1 no decision. */
static int eval_rules(json_t *rules, const char *name, const char *where, char *why, size_t n)
{
    if (!rules)
        return -1;
    const char *hit = NULL;
    if (!json_is_object(rules)) {
        snprintf(why, n, "%s \"policy\" is not an object (fail-closed: everything denied)", where);
        return 0;
    }
    int d = match_list(json_object_get(rules, "deny"), name, &hit);
    if (d < 0) {
        snprintf(why, n, "%s policy.deny is not a list of strings (fail-closed)", where);
        return 0;
    }
    if (d) {
        snprintf(why, n, "denied by %s policy rule deny \"%s\"", where, hit);
        return 0;
    }
    json_t *allow = json_object_get(rules, "allow");
    int a = match_list(allow, name, &hit);
    if (a < 0) {
        snprintf(why, n, "%s policy.allow is not a list of strings (fail-closed)", where);
        return 0;
    }
    if (allow && !a) {
        snprintf(why, n, "not in the %s policy allow list", where);
        return 0;
    }
    return -1;
}

/* The per-tool, per-server and global lists: 1 = allowed; 0 = denied with the rule in why. */
static int lists_allow(const char *server, const char *tool, const char *fn, char *why, size_t n)
{
    if (!config)
        return 1;
    char where[300];
    for (size_t i = 0; i < config->n_servers; i++) {
        const struct cfg_server *s = &config->servers[i];
        if (strcmp(s->name, server) != 0)
            continue;
        json_t *t = json_object_get(s->tools, tool);
        json_t *tp = json_object_get(t, "policy");
        if (tp) {
            if (json_is_string(tp) && strcmp(json_string_value(tp), "allow") == 0)
                return 1;
            if (json_is_string(tp) && strcmp(json_string_value(tp), "deny") == 0)
                snprintf(why, n, "denied by the config: %s.tools.%s.policy is \"deny\"", server,
                         tool);
            else
                snprintf(why, n, "%s.tools.%s.policy must be \"allow\" or \"deny\" (fail-closed)",
                         server, tool);
            return 0;
        }
        json_t *rules = json_object_get(s->entry, "policy");
        if (!rules)
            break; /* (eval_rules: -1) */
        snprintf(where, sizeof(where), "server %s", server);
        int r = eval_rules(rules, tool, where, why, n);
        if (r >= 0)
            return r;
        break;
    }
    int r = eval_rules(json_object_get(config->root, "policy"), fn, "the global", why, n);
    return r >= 0 ? r : 1;
}

enum policy_effect policy_decide(const struct policy_call *c, struct policy_decision *d)
{
    d->rule[0] = d->why[0] = 0;
    d->effect = POLICY_DENY;
    if (!lists_allow(c->server, c->tool, c->fn, d->why, sizeof(d->why)))
        return d->effect;
    if (rules_decide(c, d))
        return d->effect;
    d->effect = POLICY_ALLOW; /* why stays empty: no rule decided (formatting it on every
                               * allowed call was ~5 % of the gateway's work per call) */
    return d->effect;
}
