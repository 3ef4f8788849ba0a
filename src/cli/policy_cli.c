/* policy_cli — `codemcp policy check`: which rule decides a call, and why, from the config
 * alone (no upstream is started). The call is written as the program would write it,
 * `fn(key="value", n=3, flag=True, items=["a"])`; fn is split into server and tool at the
 * longest configured server name followed by `_` (or give --server and --tool). Whether the
 * tool writes is not known without its server: say --write for a write tool. The decision is
 * policy_decide's, the one the gateway makes on every call. */
#include "policy_cli.h"
#include "config.h"
#include "policy.h"
#include "util.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies a Python literal (strings in ' or ", True/False/None, numbers, lists, dicts) as JSON
 * into b, stopping at a top-level `,` or `)` (returned position). NULL on an unclosed string. */
static const char *literal_to_json(const char *p, struct buf *b)
{
    int depth = 0;
    for (; *p; p++) {
        if (*p == '"' || *p == '\'') {
            char q = *p++;
            buf_append(b, "\"", 1);
            for (; *p && *p != q; p++) {
                if (*p == '\\' && p[1]) {
                    if (p[1] != '\'')
                        buf_append(b, p, 1);
                    p++;
                } else if (*p == '"')
                    buf_append(b, "\\", 1);
                buf_append(b, p, 1);
            }
            if (!*p)
                return NULL;
            buf_append(b, "\"", 1);
            continue;
        }
        if (!depth && (*p == ',' || *p == ')'))
            return p;
        depth += (*p == '[' || *p == '{') - (*p == ']' || *p == '}');
        const char *words[][2] = {{"True", "true"}, {"False", "false"}, {"None", "null"}};
        int hit = 0;
        for (int i = 0; i < 3 && !hit; i++)
            if (!strncmp(p, words[i][0], strlen(words[i][0]))) {
                buf_appends(b, words[i][1]);
                p += strlen(words[i][0]) - 1;
                hit = 1;
            }
        if (!hit)
            buf_append(b, p, 1);
    }
    return p;
}

/* "fn(k=v, ...)" into fn and a JSON object of the arguments: 0, or -1 with err. */
static int parse_call(const char *call, char **fn, json_t **args, char *err, size_t n)
{
    const char *open = strchr(call, '(');
    if (!open || !strrchr(open, ')')) {
        snprintf(err, n, "--call must look like fn(key=\"value\", ...)");
        return -1;
    }
    *fn = xstrndup(call, (size_t)(open - call));
    struct buf b = {0};
    buf_appends(&b, "{");
    const char *p = open + 1;
    while (*p && *p != ')') {
        p += strspn(p, " \t\n,");
        size_t klen = strcspn(p, "= \t");
        if (*p == ')')
            break;
        if (!klen || !strchr(p, '=')) {
            snprintf(err, n, "each argument must be key=value");
            goto fail;
        }
        buf_printf(&b, "%s\"%.*s\": ", b.len > 1 ? ", " : "", (int)klen, p);
        p = strchr(p, '=') + 1;
        if (!(p = literal_to_json(p, &b))) {
            snprintf(err, n, "a string is not closed");
            goto fail;
        }
    }
    buf_appends(&b, "}");
    json_error_t je;
    if (!(*args = json_loads(b.data, 0, &je))) {
        snprintf(err, n, "the arguments are not literals: %s", je.text);
        goto fail;
    }
    buf_free(&b);
    return 0;
fail:
    buf_free(&b);
    return -1;
}

static void usage(FILE *f)
{
    fputs("usage: codemcp policy check --call 'fn(key=\"value\", ...)' [--principal P] "
          "[--server S --tool T] [--write] [--dry-run]\n"
          "  prints which policy rule decides the call and why; exit 0 allowed (or stubbed as a "
          "dry run), 1 denied, 2 a usage or config error\n",
          f);
}

int policy_cli_main(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"call", required_argument, NULL, 'c'},   {"principal", required_argument, NULL, 'p'},
        {"server", required_argument, NULL, 's'}, {"tool", required_argument, NULL, 't'},
        {"write", no_argument, NULL, 'w'},        {"dry-run", no_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    const char *call = NULL, *principal = "local", *server = NULL, *tool = NULL;
    int write = 0, dry = 0, c, rc = 2;
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc < 1 || strcmp(argv[0], "check") != 0) {
        usage(stderr);
        return 2;
    }
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'c')
            call = optarg;
        else if (c == 'p')
            principal = optarg;
        else if (c == 's')
            server = optarg;
        else if (c == 't')
            tool = optarg;
        else if (c == 'w' || c == 'd')
            *(c == 'w' ? &write : &dry) = 1;
        else {
            usage(c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : 2;
        }
    }
    if (!call) {
        usage(stderr);
        return 2;
    }
    struct cfg cfg;
    char *err = NULL, perr[300];
    char *fn = NULL;
    json_t *args = NULL;
    if (cfg_load(config_path, &cfg, &err) < 0) {
        fprintf(stderr, "codemcp policy: %s\n", err);
        goto out;
    }
    if (parse_call(call, &fn, &args, perr, sizeof(perr)) < 0) {
        fprintf(stderr, "codemcp policy: %s\n", perr);
        goto out;
    }
    size_t best = 0;
    for (size_t i = 0; !server && i < cfg.n_servers; i++) {
        size_t l = strlen(cfg.servers[i].name);
        if (l > best && !strncmp(fn, cfg.servers[i].name, l) && fn[l] == '_') {
            best = l;
            tool = fn + l + 1;
        }
    }
    for (size_t i = 0; best && i < cfg.n_servers; i++)
        if (strlen(cfg.servers[i].name) == best && !strncmp(fn, cfg.servers[i].name, best))
            server = cfg.servers[i].name;
    if (!server || !tool) {
        fprintf(stderr, "codemcp policy: %s names no configured server: give --server and --tool\n",
                fn);
        goto out;
    }
    policy_init(&cfg);
    char *text = json_dumps(args, JSON_COMPACT);
    struct policy_decision d;
    enum policy_effect e = policy_decide(
        &(struct policy_call){principal, server, tool, fn, write, dry, text, strlen(text)}, &d);
    free(text);
    printf("call:      %s/%s as %s (%s%s)\n", server, tool, principal, write ? "write" : "read",
           dry ? ", dry run" : "");
    printf("decision:  %s\n", e == POLICY_ALLOW ? "allow" : e == POLICY_DENY ? "deny" : "dry_run");
    printf("rule:      %s\n", d.rule[0] ? d.rule : "(none)");
    if (d.why[0])
        printf("why:       %s\n", d.why);
    else
        printf("why:       no policy rule names %s/%s: allowed\n", server, tool);
    rc = e == POLICY_DENY;
out:
    json_decref(args);
    free(fn);
    free(err);
    cfg_free(&cfg);
    return rc;
}
