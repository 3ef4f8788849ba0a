/* admin_cli — see admin_cli.h. Client side only: blocking socket I/O is fine here. */
#include "admin_cli.h"
#include "admin_client.h"
#include "admin_paths.h"
#include "settings.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALL_TIMEOUT_MS 10000

struct cmd {
    const char *name;
    const char *args; /* positional arguments, for the usage line */
    int nargs;
    int has_default; /* takes -d/--make-default */
    const char *help;
};

static const struct cmd cmds[] = {
    {"list", "", 0, 0, "every configured server and its live state"},
    {"enable", "NAME", 1, 1, "connect server NAME now (runtime only unless -d)"},
    {"disable", "NAME", 1, 1, "disconnect server NAME now (runtime only unless -d)"},
    {"tools", "", 0, 0, "every known tool, on or off, default and session override"},
    {"enable-tool", "SERVER TOOL", 2, 1,
     "expose TOOL of SERVER (session only unless -d; connects SERVER if needed)"},
    {"disable-tool", "SERVER TOOL", 2, 1,
     "hide TOOL of SERVER from the SDK and refuse calls to it (session only unless -d)"},
    {"instances", "", 0, 0, "every running gateway of this user"},
    {"metrics", "", 0, 0, "the gateway's Prometheus metrics, the text GET /metrics serves"},
};

int admin_cli_is_command(const char *name)
{
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(cmds[i].name, name) == 0)
            return 1;
    return 0;
}

static void usage(FILE *f, const struct cmd *c)
{
    fprintf(f, "usage: codemcp %s%s%s [-i LAUNCHER|PID|CONFIG-SUBSTRING]%s [--json]\n\n%s.\n\n",
            c->name, *c->args ? " " : "", c->args, c->has_default ? " [-d]" : "", c->help);
    fputs("options:\n"
          "  -i, --instance SEL   the gateway to talk to: its PID, its launcher label, or part of\n"
          "                       its config path (needed when several gateways run; see\n"
          "                       `codemcp instances`)\n",
          f);
    if (c->has_default)
        fputs(
            "  -d, --make-default   also write the change into mcp.json (comments and other keys\n"
            "                       are kept; the previous file is kept as mcp.json.bak)\n",
            f);
    if (strcmp(c->name, "enable") == 0)
        fputs("      --no-wait        return at once instead of waiting for the connection\n", f);
    fputs("      --json           print the gateway's reply as JSON (for scripts)\n"
          "  -h, --help           this help\n"
          "\nThe gateway is found through its admin socket in $XDG_RUNTIME_DIR/codemcp/ (else\n"
          "~/.config/codemcp/run/); CODEMCP_ADMIN_SOCKET names a socket directly.\n",
          f);
}

static void print_json(json_t *v)
{
    char *t = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("%s\n", t ? t : "null");
    free(t);
}

static const char *str(json_t *o, const char *k, const char *def)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : def;
}

static void print_list(json_t *reply)
{
    printf("%-20s %-7s %-8s %-15s %-11s %-6s %-11s %s\n", "NAME", "TYPE", "DEFAULT", "CONNECTED",
           "AUTH", "TOOLS", "PROTOCOL", "LAST ERROR");
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(reply, "servers"), i, s)
    {
        const char *state = str(s, "state", "?");
        char conn[32];
        if (json_is_true(json_object_get(s, "connected")))
            snprintf(conn, sizeof(conn), "yes");
        else
            snprintf(conn, sizeof(conn), "no (%s)", state);
        printf("%-20s %-7s %-8s %-15s %-11s %-6d %-11s %s\n", str(s, "name", "?"),
               str(s, "type", "?"), json_is_true(json_object_get(s, "default")) ? "yes" : "no",
               conn, str(s, "auth", "?"), (int)json_integer_value(json_object_get(s, "tools")),
               str(s, "protocol", "-"), str(s, "error", ""));
    }
    /* After the table: what the config says that codemcp cannot act on. */
    json_array_foreach(json_object_get(reply, "servers"), i, s)
    {
        size_t j;
        json_t *w;
        json_array_foreach(json_object_get(s, "warnings"), j, w)
            printf("warning: %s\n", json_string_value(w));
    }
}

static void print_tools(json_t *reply)
{
    printf("%-18s %-28s %-4s %-8s %-8s %s\n", "SERVER", "TOOL", "ON", "DEFAULT", "SESSION",
           "SUMMARY");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(reply, "tools"), i, t)
    {
        const char *session = str(t, "session", NULL);
        const char *sum = str(t, "summary", "");
        printf("%-18s %-28s %-4s %-8s %-8s %.70s%s\n", str(t, "server", "?"), str(t, "tool", "?"),
               json_is_true(json_object_get(t, "on")) ? "yes" : "off",
               json_is_true(json_object_get(t, "default")) ? "on" : "off",
               session ? (strcmp(session, "on") == 0 ? "s:on" : "s:off") : "-", sum,
               strlen(sum) > 70 ? "…" : "");
    }
}

/* After `enable`: waits until the server leaves "connecting" (bounded). */
static json_t *wait_connected(const char *sock, const char *name, char *why, size_t n)
{
    int64_t end = now_ms() + 120000;
    for (;;) {
        json_t *r = admc_call(sock, "list", NULL, CALL_TIMEOUT_MS, why, n);
        if (!r)
            return NULL;
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(r, "servers"), i, s)
        {
            if (strcmp(str(s, "name", ""), name) == 0 &&
                (strcmp(str(s, "state", ""), "connecting") != 0 || now_ms() > end)) {
                json_incref(s);
                json_decref(r);
                return s;
            }
        }
        json_decref(r);
        usleep(100 * 1000);
    }
}

static int run_instances(int json)
{
    json_t *all = admp_instances();
    if (json) {
        print_json(all);
    } else if (!json_array_size(all)) {
        printf("no running codemcp gateway\n");
    } else {
        char *t = admc_format_instances(all);
        fputs(t, stdout);
        free(t);
    }
    json_decref(all);
    return 0;
}

int admin_cli_main(const struct settings *s, int argc, char **argv)
{
    const struct cmd *c = NULL;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(cmds[i].name, argv[0]) == 0)
            c = &cmds[i];
    if (!c)
        return 2;
    static const struct option opts[] = {
        {"instance", required_argument, NULL, 'i'}, {"json", no_argument, NULL, 'j'},
        {"make-default", no_argument, NULL, 'd'},   {"no-wait", no_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    const char *sel = NULL;
    int json = 0, make_default = 0, no_wait = 0, o;
    optind = 0; /* re-initialise GNU getopt for this argv */
    while ((o = getopt_long(argc, argv, c->has_default ? "i:dh" : "i:h", opts, NULL)) != -1) {
        switch (o) {
        case 'i':
            sel = optarg;
            break;
        case 'j':
            json = 1;
            break;
        case 'd':
            if (!c->has_default) {
                fprintf(stderr, "codemcp %s: -d/--make-default does not apply here\n", c->name);
                return 2;
            }
            make_default = 1;
            break;
        case 'W':
            no_wait = 1;
            break;
        case 'h':
            usage(stdout, c);
            return 0;
        default:
            usage(stderr, c);
            return 2;
        }
    }
    if (argc - optind != c->nargs) {
        fprintf(stderr, "codemcp %s: expected %s%s\n", c->name, c->nargs ? c->args : "no arguments",
                argc - optind > c->nargs ? " (too many arguments)" : "");
        usage(stderr, c);
        return 2;
    }
    if (strcmp(c->name, "instances") == 0)
        return run_instances(json);

    char why[8192];
    json_t *inst = admc_select(s->admin_socket, sel, why, sizeof(why));
    if (!inst) {
        fprintf(stderr, "codemcp %s: %s\n", c->name, why);
        return 1;
    }
    const char *sock = str(inst, "socket", "");
    const char *method = c->name;
    json_t *params = NULL;
    if (c->nargs == 1) {
        params = json_pack("{s:s, s:b}", "name", argv[optind], "make_default", make_default);
    } else if (c->nargs == 2) {
        params = json_pack("{s:s, s:s, s:b}", "server", argv[optind], "tool", argv[optind + 1],
                           "make_default", make_default);
        method = c->name[0] == 'e' ? "enable_tool" : "disable_tool";
    }
    json_t *reply = admc_call(sock, method, params, CALL_TIMEOUT_MS, why, sizeof(why));
    int rc = 1;
    if (!reply) {
        fprintf(stderr, "codemcp %s: %s\n", c->name, why);
        goto done;
    }
    if (!json_is_true(json_object_get(reply, "ok"))) {
        if (json)
            print_json(reply);
        fprintf(stderr, "codemcp %s: %s\n", c->name, str(reply, "error", "failed"));
        goto done;
    }
    rc = 0;
    if (strcmp(c->name, "enable") == 0 && !no_wait) {
        json_t *s = wait_connected(sock, argv[optind], why, sizeof(why));
        if (s) {
            json_object_set_new(reply, "state", json_string(str(s, "state", "?")));
            if (json_is_string(json_object_get(s, "error")))
                json_object_set(reply, "last_error", json_object_get(s, "error"));
            json_object_set(reply, "tools", json_object_get(s, "tools"));
            if (!json_is_true(json_object_get(s, "connected")))
                rc = 1;
            json_decref(s);
        }
    }
    if (json)
        print_json(reply);
    else if (strcmp(method, "list") == 0)
        print_list(reply);
    else if (strcmp(method, "tools") == 0)
        print_tools(reply);
    else if (strcmp(method, "metrics") == 0)
        fputs(str(reply, "text", ""), stdout);
    else if (strcmp(c->name, "enable") == 0 && !no_wait)
        printf("%s: %s%s%s (%d tools)%s\n", argv[optind],
               rc == 0 ? "connected" : str(reply, "state", "?"),
               json_is_string(json_object_get(reply, "last_error")) ? ": " : "",
               str(reply, "last_error", ""),
               (int)json_integer_value(json_object_get(reply, "tools")),
               json_is_true(json_object_get(reply, "wrote")) ? "; mcp.json updated" : "");
    else
        printf("%s\n", str(reply, "message", "done"));
done:
    json_decref(reply);
    json_decref(inst);
    return rc;
}
