/* main — the codemcp command line: parse arguments, load the config, wire the modules
 * together and run the event loop.
 *
 * Modes: serve MCP over stdio (default), `start` (Streamable HTTP), CODEMCP_DUMP=1
 * (print the generated SDK and the execute_python description, then exit) and
 * CODEMCP_SMOKE='code' (run one program against the upstreams, print its envelope, exit).
 * Shutdown order: front (cancels runs) → workers → upstreams (stdin, SIGTERM, SIGKILL)
 * → flush stdout → stop the loop. */
#include "admin.h"
#include "admin_cli.h"
#include "audit.h"
#include "calls.h"
#include "catalog.h"
#include "config.h"
#include "connlimit.h"
#include "control.h"
#include "jsonrpc.h"
#include "jsonpretty.h"
#include "log.h"
#include "loop.h"
#include "mcp_extras.h"
#include "mcp_server.h"
#include "metrics.h"
#include "namespaces.h"
#include "oauth_cli.h"
#include "oauth_gw.h"
#include "oauth_state.h"
#include "pgguard.h"
#include "policy.h"
#include "policy_cli.h"
#include "redact.h"
#include "runs.h"
#include "serve_http.h"
#include "serve_stdio.h"
#include "settings.h"
#include "setup.h"
#include "shapes.h"
#include "state.h"
#include "trace.h"
#ifdef CODEMCP_TUI
#include "tui.h"
#endif
#include "upstream.h"
#include "usage.h"
#include "util.h"
#include "workers.h"
#include "sandbox.h"
#include "health.h"
#include "replica.h"

#include <getopt.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mode { MODE_STDIO, MODE_DUMP, MODE_SMOKE, MODE_HTTP };

static enum mode mode = MODE_STDIO;
static struct settings settings; /* read once, first thing; every module gets its part */
static struct cfg config;
static int exit_code;
static int shutting_down;
static int serving;
static struct lp_timer shutdown_deadline, flush_timer, settle_timer;
static const char *smoke_code;
static const char *dump_client; /* --describe-budget / CODEMCP_DUMP_CLIENT: whose view */
static int describe_only;       /* --describe-budget: no sdk.py in the dump */

static void usage(FILE *f)
{
    fputs("usage: codemcp [options]              serve MCP over stdio\n"
          "       codemcp start [-p PORT] [-H HOST] [--no-auth] [--print-token]\n"
          "                                    serve MCP over Streamable HTTP (bearer token\n"
          "                                    required; --print-token shows it, --no-auth\n"
          "                                    turns it off on loopback only); HTTP+SSE\n"
          "                                    (2024-11-05) clients connect to /sse\n"
          "       codemcp setup opencode|claude-desktop|cursor|vscode|claude-code|windsurf|\n"
          "                     gemini-cli|cline|roo-code [--dry-run] [--undo]\n"
          "                                    move a harness's MCP servers behind codemcp\n"
          "       codemcp init                 write a commented starter mcp.json\n"
          "       codemcp list|tools|instances      a running gateway's servers / tools / all "
          "gateways\n"
          "       codemcp metrics [-i SEL]          a running gateway's Prometheus metrics\n"
          "       codemcp enable|disable NAME [-d]  connect / disconnect a server now\n"
          "       codemcp enable-tool|disable-tool SERVER TOOL [-d]\n"
          "       codemcp tui [-i SEL]              full-screen control of a running gateway\n"
          "       (admin commands take -i LAUNCHER|PID|CONFIG-SUBSTRING, --json)\n"
          "       codemcp auth NAME [--no-browser]   OAuth login for a remote server\n"
          "       codemcp auth [--list]              every remote server's auth state\n"
          "       codemcp logout NAME                revoke and delete its stored tokens\n"
          "       codemcp policy check --call 'fn(k=\"v\")' [--principal P] [--write]\n"
          "                                    which policy rule decides a call, and why\n"
          "       codemcp settings                   every setting, its value and where it came "
          "from\n"
          "       codemcp COMMAND --help             a command's own options\n"
          "\n"
          "options:\n"
          "  -c, --config PATH   mcp.json to load (default: $CODEMCP_CONFIG, else\n"
          "                      $XDG_CONFIG_HOME/codemcp/mcp.json, else "
          "~/.config/codemcp/mcp.json)\n"
          "      --wrap CMDLINE  serve a single stdio upstream, no config file needed\n"
          "      --name NAME     server name for --wrap (default: from the executable)\n"
          "      --describe-budget[=CLIENT]  print the execute_python description and the\n"
          "                      instructions CLIENT (a clientInfo.name, e.g. claude-code)\n"
          "                      would receive, with their sizes, then exit\n"
          "  -h, --help          this help\n"
          "  -V, --version       print the version\n"
          "\n"
          "environment (see README): CODEMCP_DUMP=1 prints the generated SDK and the\n"
          "execute_python description; CODEMCP_SMOKE='code' runs one program and exits;\n"
          "CODEMCP_LOG=error|warn|info|debug|trace sets the stderr log level.\n"
          "Agent code runs sandboxed (CODEMCP_ISOLATION=sandbox, the default: own namespaces,\n"
          "no network, no home, seccomp); CODEMCP_ISOLATION=host turns that off (unsafe).\n"
          "Workers are forked from a prototype process (CODEMCP_PROTOTYPE=off: started anew).\n"
          "A remote server gets at most CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM (100)\n"
          "requests at once (its \"maxConnections\" in mcp.json overrides it; 0: no cap).\n"
          "One run has at most CODEMCP_MAX_CALLS_PER_RUN (256) tool calls in flight; more\n"
          "wait in order (0: no bound).\n",
          f);
}

static void usage_settings(FILE *f)
{
    fputs("usage: codemcp settings\n"
          "\n"
          "Prints every setting codemcp reads (the CODEMCP_* variables and the few outside ones\n"
          "it honours), one per line: VARIABLE=value, then where the value came from (default,\n"
          "environment, or default because the value was bad) and what the setting does.\n"
          "Secrets (CODEMCP_HTTP_TOKEN) are never shown, only whether they are set; nor is\n"
          "the user:password of a URL (CODEMCP_AUTHZ_URL).\n",
          f);
}

/* `codemcp settings`: what this environment makes of every setting. */
static int settings_main(int argc, char **argv)
{
    if (argc > 0 && (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)) {
        usage_settings(stdout);
        return 0;
    }
    if (argc > 0) {
        fprintf(stderr, "codemcp settings: unexpected argument '%s'\n", argv[0]);
        usage_settings(stderr);
        return 2;
    }
    settings_print(&settings, stdout);
    /* What the sandbox's settings and this machine give together (the gateway logs it too). */
    struct sbx_opts o;
    char mode[512];
    sbx_opts_from_settings(&settings, &o);
    sbx_uid_mode(&o, mode, sizeof(mode));
    printf("# sandbox ids: %s\n", mode);
    return fflush(stdout) == 0 ? 0 : 1;
}

static void usage_start(FILE *f)
{
    fputs("usage: codemcp start [-p PORT] [-H HOST] [-c CONFIG] [--no-auth] [--print-token]\n"
          "\n"
          "serve MCP over Streamable HTTP at /mcp (CODEMCP_HTTP_PATH), and the 2024-11-05\n"
          "HTTP+SSE transport at /sse and /messages, to many clients at once.\n"
          "\n"
          "options:\n"
          "  -p, --port PORT     port to listen on (default 3388; 0: any free port)\n"
          "  -H, --host HOST     address to bind (default 127.0.0.1; set the allow-lists\n"
          "                      CODEMCP_HTTP_ALLOWED_HOSTS/_ORIGINS for anything else)\n"
          "  -c, --config PATH   mcp.json to load\n"
          "      --no-auth       serve without a bearer token (loopback only)\n"
          "      --print-token   print the bearer token clients must send, then exit\n"
          "  -h, --help          this help\n"
          "\n"
          "Clients send \"Authorization: Bearer <token>\"; the token is generated on first\n"
          "start in $XDG_CONFIG_HOME/codemcp/http-token (mode 0600) unless CODEMCP_HTTP_TOKEN\n"
          "or CODEMCP_HTTP_TOKENS_FILE set it. The start-up snippets show it only on a\n"
          "terminal.\n",
          f);
}

/* One line for a person who started codemcp in a terminal: what it serves, from which config,
 * and where its log goes (a harness's stderr is not a terminal: it gets nothing). */
static void print_banner(void)
{
    static const char *const levels[] = {"error", "warn", "info", "debug", "trace"};
    struct buf b = {0};
    for (size_t i = 0; i < config.n_servers && i < 6; i++)
        buf_printf(&b, "%s%s", i ? ", " : ": ", config.servers[i].name);
    if (config.n_servers > 6)
        buf_printf(&b, ", +%zu more", config.n_servers - 6);
    fprintf(stderr,
            "codemcp %s: serving MCP over %s; config %s (%zu server%s%s); log on stderr at "
            "level %s (CODEMCP_LOG)\n",
            CODEMCP_VERSION, mode == MODE_HTTP ? "Streamable HTTP" : "stdio",
            config.path                          ? config.path
            : strcmp(config.format, "wrap") == 0 ? "--wrap"
                                                 : "none",
            config.n_servers, config.n_servers == 1 ? "" : "s", b.data ? b.data : "",
            levels[log_get_level()]);
    buf_free(&b);
}

/* ---- shutdown ---------------------------------------------------------------------------- */

static void stop_when_flushed(void *ud)
{
    (void)ud;
    if (stdio_pending_output() == 0) {
        lp_stop();
        return;
    }
    lp_timer_start(&flush_timer, 10, stop_when_flushed, NULL);
}

static void upstreams_gone(void)
{
    log_debug("main", "upstreams closed");
    stop_when_flushed(NULL);
}

static void workers_gone(void)
{
    up_shutdown_all(upstreams_gone);
}

static void force_stop(void *ud)
{
    (void)ud;
    log_warn("main", "shutdown took too long; stopping anyway");
    lp_stop();
}

static void begin_shutdown(void)
{
    if (shutting_down)
        return;
    shutting_down = 1;
    lp_timer_start(&shutdown_deadline, 8000, force_stop, NULL);
    if (mode == MODE_STDIO)
        stdio_close();
    if (mode == MODE_HTTP)
        http_close();
    if (serving)
        wk_shutdown_all(workers_gone);
    else
        workers_gone();
}

/* SIGTERM/SIGINT: the harness waits ~100 ms before SIGKILL (Claude Code), so every upstream
 * gets stdin EOF and SIGTERM at once and SIGKILL at UP_SIGNAL_DEADLINE_MS; the loop stops
 * by SIGNAL_DEADLINE_MS whatever is left. A client closing stdin keeps the longer grace. */
#define UP_SIGNAL_DEADLINE_MS 50
#define SIGNAL_DEADLINE_MS    80
static void on_signal_now(void)
{
    up_set_shutdown_deadline(UP_SIGNAL_DEADLINE_MS);
    begin_shutdown();
    lp_timer_start(&shutdown_deadline, SIGNAL_DEADLINE_MS, force_stop, NULL);
}

/* What a drain waits for: runs, and answers not yet written. */
static size_t work_in_flight(void)
{
    return run_count() + http_busy();
}

/* `codemcp start` drains first (health.h): no new sessions or runs, the runs in flight
 * finish (up to CODEMCP_DRAIN_MS), then the shutdown above. A second signal does not wait. */
static void on_signal(void)
{
    if (mode == MODE_HTTP && settings.drain_ms > 0 && !health_draining() && !shutting_down)
        health_drain(settings.drain_ms, work_in_flight, on_signal_now);
    else
        on_signal_now();
}

/* /readyz: every upstream has finished its first connection attempt (the SDK and the
 * description are complete), so a new session here sees what it would see on any replica. */
static int upstreams_ready(void *ud, char *why, size_t n)
{
    (void)ud;
    if (up_all_settled())
        return 1;
    snprintf(why, n, "upstreams still connecting");
    return 0;
}

/* /readyz, reported only: the shared state store (CODEMCP_STATE) unreachable. Every replica
 * loses it at once and each serves from its last known state, so it must not take them all
 * out of the balancer. The store's address stays out of the answer. */
static int state_reachable(void *ud, char *why, size_t n)
{
    (void)ud;
    if (state_store_ok(NULL, 0))
        return 1;
    snprintf(why, n, "the shared state store is unreachable: serving from the last known state");
    return 0;
}

/* The fleet settings of `codemcp start` (replica.h); 0, or -1 after saying why. */
static int fleet_init(void)
{
    char err[300];
    if (replica_init(settings.replica_id, settings.fleet_secret, err, sizeof(err)) < 0) {
        fprintf(stderr, "codemcp: %s\n", err);
        return -1;
    }
    if (replica_id())
        log_info("main", "replica %s of a fleet", replica_id());
    health_add_check("upstreams", upstreams_ready, NULL, 1);
    health_add_check("state", state_reachable, NULL, 0);
    return 0;
}

static void on_reload(void)
{
    http_reload();
    audit_reopen();
}

/* ---- wiring ------------------------------------------------------------------------------ */

static void on_smoke_done(json_t *envelope, int is_error)
{
    char *text = jf_dumps_indented(envelope); /* json_dumps INDENT(2)|SORT_KEYS, big ints */
    printf("%s\n", text ? text : "{}");
    fflush(stdout);
    free(text);
    exit_code = is_error ? 1 : 0;
    begin_shutdown();
}

/* CODEMCP_DUMP=1: sdk.py and the full listing, or with CODEMCP_DUMP_CLIENT / --describe-budget
 * exactly the description and instructions that client receives. */
static void dump_what_clients_get(void)
{
    if (!dump_client) {
        printf("%s\n# ---- execute_python description ----\n%s\n", cat_source(), cat_description());
        return;
    }
    char *instructions = NULL;
    char *desc = cat_describe_for(dump_client, NULL, &instructions);
    if (!describe_only)
        printf("%s\n", cat_source());
    long budget = cat_budget_for(dump_client);
    printf("# ---- execute_python description for client \"%s\" (budget %s%ld, %zu bytes, %zu "
           "functions) ----\n%s\n# ---- instructions (%zu bytes) ----\n%s\n",
           dump_client, budget ? "" : "full listing, ", budget, strlen(desc),
           json_object_size(cat_functions()), desc, strlen(instructions), instructions);
    free(desc);
    free(instructions);
}

/* The dump's last word: each server that is not ready, and why; what the config says that
 * codemcp cannot act on. */
static void dump_server_problems(void)
{
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        if (up->state != UP_READY)
            printf("# server %s: %s%s%s\n", up->name, up_state_name(up->state),
                   up->error ? ": " : "", up->error ? up->error : "");
        size_t j;
        json_t *w;
        json_array_foreach(up->cfg ? up->cfg->warnings : NULL, j, w)
            printf("# warning: %s\n", json_string_value(w));
    }
}

static void on_settled_once(void)
{
    static int done;
    if (done || !up_all_settled())
        return;
    done = 1;
    lp_timer_stop(&settle_timer);
    if (mode == MODE_DUMP) {
        dump_what_clients_get();
        dump_server_problems();
        fflush(stdout);
        begin_shutdown();
    } else if (mode == MODE_SMOKE) {
        run_smoke(smoke_code, on_smoke_done);
    } else if (serving) {
        wk_prewarm();
    }
}

static void on_upstreams_changed(void)
{
    cat_rebuild();
    mcp_on_upstreams_changed();
    run_dispatch();
    on_settled_once();
}

static void on_shapes_changed(void)
{
    if (serving)
        wk_on_catalog_changed();
}

static void on_catalog_changed(void)
{
    shapes_seed();
    mcp_on_catalog_changed();
    if (serving)
        wk_on_catalog_changed();
}

/* The run pipeline, wired upward: each module reports to the one above it through these
 * hooks, so none includes a higher module's header (docs/architecture.md has the map). */
static void wire_run_pipeline(void)
{
    run_set_hooks(&(struct run_hooks){.send = mcp_send_to,
                                      .send_text = mcp_send_text_to,
                                      .log = mcp_session_log,
                                      .log_wanted = mcp_session_log_wanted});
    mcp_extras_set_send(mcp_send_to);
    wk_set_hooks(&(struct wk_hooks){.run_ended = run_on_worker_ended,
                                    .run_answered = run_on_worker_answered,
                                    .idle = run_dispatch,
                                    .slot_in_use = run_uses_slot});
    ctl_set_hooks(&(struct ctl_hooks){.authenticate = wk_authenticate,
                                      .message = wk_on_message,
                                      .frame = wk_on_frame,
                                      .disconnect = wk_on_disconnect,
                                      .broken = wk_on_broken,
                                      .is_starting = wk_is_starting});
    calls_set_hooks(&(struct calls_hooks){
        .run_lookup = run_call_rules,
        .call_done = run_on_call_done,
        .write_done = run_on_write_done,
        .reply = ctl_send,
        .reply_parts = ctl_send_parts_held,
        .reply_limit = ctl_frame_limit,
        .input_required = run_on_input_required,
        .max_per_run = settings.max_calls_per_run,
        .max_run_bytes = (size_t)settings.max_args_bytes_per_run,
        .max_principal_bytes = (size_t)settings.max_args_bytes_per_principal,
        .pending = ctl_pending,
        .max_principal_results = (size_t)settings.max_result_bytes_per_principal});
}

/* The metrics' gauges, read from the modules that own them when /metrics is rendered. */
static long namespaces_alive(void)
{
    return (long)ns_count();
}

static int upstream_at(size_t i, const char **name, const char **state)
{
    if (i >= up_count())
        return -1;
    *name = up_at(i)->name;
    *state = up_state_name(up_at(i)->state);
    return 0;
}

/* A tool call's end, counted (a resource read is no tool call). A name the catalog does not
 * list came from the program: it is no label. */
static void count_call(const struct call_event *e)
{
    if (!e->read)
        mx_tool_call(e->listed ? e->server : NULL, e->tool, e->result);
}

/* Each call's one end record goes to the observers that are on: none costs one branch. */
static void wire_call_observers(void)
{
    if (audit_enabled())
        calls_observe(audit_tool_call);
    if (mx_enabled())
        calls_observe(count_call);
}

static void wire_metrics(void)
{
    mx_init(settings.metrics);
    mx_set_sources(&(struct mx_sources){.sessions = mcp_session_count,
                                        .namespaces = namespaces_alive,
                                        .workers_alive = wk_alive,
                                        .upstream_at = upstream_at,
                                        .traces_on = trace_on,
                                        .spans_exported = trace_spans_exported,
                                        .spans_dropped = trace_spans_dropped});
}

static void check_settled(void *ud)
{
    (void)ud;
    on_settled_once();
}

int main(int argc, char **argv)
{
    settings_load(&settings);
    log_init(settings.log);
    log_set_format(settings.log_format);
    cfg_use_settings(&settings);
    log_set_filter(redact_log_line); /* every log line, trace-level upstream traffic too */
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"wrap", required_argument, NULL, 'w'},
        {"name", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"port", required_argument, NULL, 'p'},
        {"host", required_argument, NULL, 'H'},
        {"describe-budget", optional_argument, NULL, 'B'},
        {"no-auth", no_argument, NULL, 'A'},
        {"print-token", no_argument, NULL, 'T'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL, *wrap = NULL, *wrap_name = NULL, *http_host = NULL;
    int c, http_port = -1, print_token = 0;
    /* Same-user processes may not ptrace us or read /proc/<pid>/mem|environ (tokens). */
    prctl(PR_SET_DUMPABLE, 0);
    while ((c = getopt_long(argc, argv, "+c:hVp:H:", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config_path = optarg;
            break;
        case 'w':
            wrap = optarg;
            break;
        case 'n':
            wrap_name = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("codemcp %s\n", CODEMCP_VERSION);
            return 0;
        case 'B':
            describe_only = 1;
            dump_client = optarg && *optarg ? optarg : "claude-code";
            break;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc && admin_cli_is_command(argv[optind])) /* list, enable, tools, ... */
        return admin_cli_main(&settings, argc - optind, argv + optind);
    if (optind < argc && strcmp(argv[optind], "tui") == 0) {
#ifdef CODEMCP_TUI
        return tui_main(&settings, argc - optind, argv + optind);
#else
        fputs("codemcp: this build has no TUI (meson -Dtui=disabled, or no ncurses); use "
              "`codemcp list`, `codemcp tools` and the enable/disable commands\n",
              stderr);
        return 2;
#endif
    }
    if (optind < argc && strcmp(argv[optind], "setup") == 0)
        return setup_main(&settings, argc - optind - 1, argv + optind + 1, config_path);
    if (optind < argc && strcmp(argv[optind], "init") == 0)
        return init_main(&settings, argc - optind - 1, argv + optind + 1, config_path);
    if (optind < argc && strcmp(argv[optind], "auth") == 0) /* OAuth (oauth_cli.c) */
        return oauth_auth_main(&settings, argc - optind - 1, argv + optind + 1, config_path);
    if (optind < argc && strcmp(argv[optind], "policy") == 0) /* policy_cli.c */
        return policy_cli_main(argc - optind - 1, argv + optind + 1, config_path);
    if (optind < argc && strcmp(argv[optind], "logout") == 0)
        return oauth_logout_main(&settings, argc - optind - 1, argv + optind + 1, config_path);
    if (optind < argc && strcmp(argv[optind], "settings") == 0)
        return settings_main(argc - optind - 1, argv + optind + 1);
    if (optind < argc) {
        if (strcmp(argv[optind], "start") != 0) {
            fprintf(stderr, "codemcp: unknown command '%s'\n", argv[optind]);
            usage(stderr);
            return 2;
        }
        mode = MODE_HTTP;
        optind++; /* `start` takes its own options: -p PORT, -H HOST (and -c) */
        while ((c = getopt_long(argc, argv, "+c:p:H:h", opts, NULL)) != -1) {
            char *end;
            switch (c) {
            case 'h':
                usage_start(stdout);
                return 0;
            case 'c':
                config_path = optarg;
                break;
            case 'p':
                http_port = (int)strtol(optarg, &end, 10);
                if (*end || !*optarg || http_port < 0 || http_port > 65535) {
                    fprintf(stderr, "codemcp: -p needs a port number (0-65535), got '%s'\n",
                            optarg);
                    return 2;
                }
                break;
            case 'H':
                http_host = optarg;
                break;
            case 'A':
                http_set_no_auth(1);
                break;
            case 'T':
                print_token = 1;
                break;
            default:
                usage_start(stderr);
                return 2;
            }
        }
        if (optind < argc) {
            fprintf(stderr, "codemcp: unexpected argument '%s'\n", argv[optind]);
            return 2;
        }
        if (print_token)
            return http_print_token(&settings);
    }
    const char *transport = settings.transport;
    if (mode == MODE_STDIO && transport && strcmp(transport, "http") == 0)
        mode = MODE_HTTP;
    else if (transport && *transport && strcmp(transport, "http") && strcmp(transport, "stdio"))
        log_warn("main", "CODEMCP_TRANSPORT=%s is not stdio or http; using %s", transport,
                 mode == MODE_HTTP ? "http" : "stdio");
    if (settings.dump || describe_only)
        mode = MODE_DUMP;
    if (!dump_client && settings.dump_client)
        dump_client = settings.dump_client;
    smoke_code = settings.smoke;
    if (smoke_code && *smoke_code && mode == MODE_STDIO)
        mode = MODE_SMOKE;

    /* Before the config (secrets) and any thread: the guard that kills our children's process
     * groups if we are SIGKILLed (PDEATHSIG reaches only direct children). */
    if (mode != MODE_DUMP)
        pg_guard_start();

    char *err = NULL;
    int rc =
        wrap ? cfg_from_wrap(wrap, wrap_name, &config, &err) : cfg_load(config_path, &config, &err);
    if (rc < 0) {
        if (wrap || (mode != MODE_STDIO && mode != MODE_HTTP)) {
            fprintf(stderr, "codemcp: %s\n", err ? err : "cannot load the config");
            free(err);
            return 1;
        }
        /* Serving: a broken config must not take the gateway down; serve no upstreams. */
        log_error("config", "%s — serving with no upstream servers until it is fixed",
                  err ? err : "cannot load the config");
        free(err);
        memset(&config, 0, sizeof(config));
    }
    log_info("main", "config: %s (%zu servers)", config.path ? config.path : "(none)",
             config.n_servers);
    if ((mode == MODE_STDIO || mode == MODE_HTTP) && isatty(STDERR_FILENO))
        print_banner();

    policy_init(&config);
    lp_raise_nofile();
    /* Before any thread (the audit sink's, the state store's, curl's): the sandbox probe forks
     * this process and its child must not inherit a lock some thread held. */
    if (mode != MODE_DUMP && wk_choose_isolation(&settings) < 0)
        return 1; /* CODEMCP_ISOLATION: the sandbox cannot be built (logged) */
    if (lp_init() < 0)
        return 1;
    /* CODEMCP_AUTHZ_URL: its HTTP thread posts to the loop */
    policy_engine_init(settings.authz_url, settings.authz_timeout_ms);
    char audit_err[512];
    if (mode != MODE_DUMP &&
        audit_init(settings.audit_log, settings.audit_args, audit_err, sizeof(audit_err)) < 0) {
        log_error("main", "%s", audit_err);
        return 1;
    }
    /* CODEMCP_STATE: its threads post to the loop; before the owners register their hooks */
    if (state_init(settings.state) < 0)
        return 1;
    oast_init();
    /* Before any child is spawned: a taken port ends here, with a message naming it. */
    if (mode == MODE_HTTP && (fleet_init() < 0 || http_serve(&settings, http_host, http_port) < 0))
        return 1;
    lp_on_shutdown_signal(on_signal);
    if (mode == MODE_HTTP) /* stdio keeps SIGHUP = shutdown (the terminal went away) */
        lp_on_reload_signal(on_reload);
    up_set_listener(on_upstreams_changed);
    up_set_extras_listener(mcp_on_extras_changed);
    cat_set_listener(on_catalog_changed);
    /* stdio: one principal, whose view is the shared one */
    shapes_init(settings.learn_shapes,
                settings.share_learning >= 0 ? settings.share_learning : mode != MODE_HTTP);
    shapes_set_listener(on_shapes_changed);
    shapes_fleet_init();
    use_init(&settings, shapes_shared());
    use_fleet_init();
    budget_fleet_init();
    cat_set_priority_source(use_ranked);
    cat_set_wake_hook(run_dispatch);
    cat_init(&settings);
    mcp_set_list_wait(settings.list_wait_ms);
    run_init(&settings);
    wire_run_pipeline();
    wire_metrics();
    wire_call_observers();

    if (mode != MODE_DUMP) {
        if (ctl_init(&settings) < 0)
            return 1;
        /* One interpreter per session (workers.c): stdio has one session; an HTTP gateway
         * keeps up to CODEMCP_WORKERS sessions' workers alive at once. */
        long workers = settings.workers > 0 ? settings.workers : mode == MODE_HTTP ? 16 : 1;
        ns_init(&settings, wk_session_closed); /* a home left with no namespace: its worker ends */
        int wr = wk_init(&settings, (int)workers);
        if (wr < 0) {
            if (mode == MODE_SMOKE)
                return 1;
            log_error("main", "execute_python will fail until codemcp-worker is installed");
        } else {
            serving = 1;
        }
    }
    if (mode == MODE_STDIO && stdio_serve(begin_shutdown) < 0)
        return 1;
    if (mode == MODE_STDIO || mode == MODE_HTTP) /* live control: codemcp list/enable/tui */
        adm_start(&config, mode == MODE_HTTP ? "http" : "stdio",
                  mode == MODE_HTTP ? http_url() : NULL, settings.instance_label);
    if (mode == MODE_SMOKE && !serving)
        return 1;

    trace_init(&settings);
    up_start_all(&config, &settings);
    /* With CODEMCP_PROTOTYPE_EARLY the prototype starts now, beside the upstreams: the first
     * program's worker is forked from it. After them: its spawn takes the loop a few ms that
     * their spawns need not wait for. */
    if (serving)
        wk_prestart();
    lp_timer_start(&settle_timer, 0, check_settled, NULL);
    lp_run();

    oagw_drain(5000); /* OAuth refreshes in flight get to store their tokens */
    state_stop();     /* after them: what they queued for the shared store is written */
    adm_stop();
    run_free_all();
    ns_free_all();
    health_free();
    mcp_free_all();
    calls_free_all();
    audit_close(); /* after the last call's line */
    ctl_free_all();
    up_free_all();
    cat_free();
    use_free();
    shapes_free();
    trace_shutdown(); /* after every span's owner is gone: the last spans are in the queue */
    cl_free_all();    /* before the context: WSI_DESTROY callbacks then find nothing to do */
    lp_destroy();
    cfg_free(&config);
    mx_free();
    pg_guard_stop(); /* after every child is gone; reaps the guard */
    return exit_code;
}
