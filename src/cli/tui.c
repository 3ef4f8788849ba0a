/* tui — `codemcp tui`: a full-screen ncurses view of one running gateway's servers and tools,
 * driven through its admin socket (admin_client.h), like the original's TUI.
 *
 * Left pane: servers (● connected / ○ not, type, default, tool count). Right pane: the tools of
 * the selected server (ON/off, (s) a session override, (d) default off, summary). Keys: Space
 * toggles for this gateway run, D toggles the default (writes mcp.json), Tab switches panes,
 * j/k/arrows move, / filters the tools, r refreshes, ? help, q quits. The state is re-read every
 * 2 s and after each action. When the gateway goes away an error screen says so (r retries,
 * q quits). Client side only; built when ncurses is (meson -Dtui=disabled leaves it out). */
#include "tui.h"
#include "admin_client.h"
#include "settings.h"

#include <curses.h>
#include <getopt.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALL_MS    10000
#define REFRESH_MS 2000

struct tui {
    const char *selector;
    const char *admin_socket; /* CODEMCP_ADMIN_SOCKET */
    json_t *inst;             /* instance record (owned) */
    json_t *servers;          /* array (owned) */
    json_t *tools;            /* all tools (owned) */
    int pane;                 /* 0 servers, 1 tools */
    int sel[2];
    char filter[64];
    char status[512];
    char gone[4096]; /* non-empty: the gateway cannot be reached */
    int utf8;
};

static const char *jstr(json_t *o, const char *k, const char *def)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : def;
}

/* ---- talking to the gateway ---------------------------------------------------------------- */

static json_t *call(struct tui *t, const char *method, json_t *params)
{
    char why[1024];
    json_t *r = admc_call(jstr(t->inst, "socket", ""), method, params, CALL_MS, why, sizeof(why));
    if (!r) {
        snprintf(t->gone, sizeof(t->gone), "%s", why);
        return NULL;
    }
    return r;
}

static int attach(struct tui *t)
{
    char why[4000];
    json_decref(t->inst);
    t->inst = admc_select(t->admin_socket, t->selector, why, sizeof(why));
    if (!t->inst) {
        snprintf(t->gone, sizeof(t->gone), "%s", why);
        return -1;
    }
    t->gone[0] = 0;
    return 0;
}

static void refresh_state(struct tui *t)
{
    if (t->gone[0])
        return;
    json_t *l = call(t, "list", NULL);
    json_t *k = l ? call(t, "tools", NULL) : NULL;
    if (l && k) {
        json_decref(t->servers);
        json_decref(t->tools);
        t->servers = json_incref(json_object_get(l, "servers"));
        t->tools = json_incref(json_object_get(k, "tools"));
    }
    json_decref(l);
    json_decref(k);
}

static json_t *selected_server(struct tui *t)
{
    return json_array_get(t->servers, (size_t)t->sel[0]);
}

/* The tools shown in the right pane: of the selected server, matching the filter (borrowed
 * items in a new array). */
static json_t *visible_tools(struct tui *t)
{
    json_t *out = json_array();
    const char *srv = jstr(selected_server(t), "name", "");
    size_t i;
    json_t *x;
    json_array_foreach(t->tools, i, x)
    {
        if (strcmp(jstr(x, "server", ""), srv) != 0)
            continue;
        if (t->filter[0] && !strstr(jstr(x, "tool", ""), t->filter) &&
            !strstr(jstr(x, "summary", ""), t->filter))
            continue;
        json_array_append(out, x);
    }
    return out;
}

static void act(struct tui *t, const char *method, json_t *params)
{
    json_t *r = call(t, method, params);
    if (!r)
        return;
    if (json_is_true(json_object_get(r, "ok")))
        snprintf(t->status, sizeof(t->status), "%s", jstr(r, "message", "done"));
    else
        snprintf(t->status, sizeof(t->status), "error: %s", jstr(r, "error", "failed"));
    json_decref(r);
    refresh_state(t);
}

/* Space (make_default 0) or D (1) on the focused row. */
static void toggle(struct tui *t, int make_default)
{
    json_t *s = selected_server(t);
    if (!s)
        return;
    const char *name = jstr(s, "name", "");
    if (t->pane == 0) {
        int on = make_default ? !json_is_true(json_object_get(s, "default"))
                              : !(json_is_true(json_object_get(s, "connected")) ||
                                  strcmp(jstr(s, "state", ""), "connecting") == 0);
        act(t, on ? "enable" : "disable",
            json_pack("{s:s, s:b}", "name", name, "make_default", make_default));
        return;
    }
    json_t *vis = visible_tools(t);
    json_t *x = json_array_get(vis, (size_t)t->sel[1]);
    if (x) {
        int on = !json_is_true(json_object_get(x, make_default ? "default" : "on"));
        act(t, on ? "enable_tool" : "disable_tool",
            json_pack("{s:s, s:s, s:b}", "server", name, "tool", jstr(x, "tool", ""),
                      "make_default", make_default));
    }
    json_decref(vis);
}

/* ---- drawing ----------------------------------------------------------------------------- */

static void frame(int y, int x, int h, int w, const char *title)
{
    mvaddch(y, x, ACS_ULCORNER);
    mvhline(y, x + 1, ACS_HLINE, w - 2);
    mvaddch(y, x + w - 1, ACS_URCORNER);
    mvvline(y + 1, x, ACS_VLINE, h - 2);
    mvvline(y + 1, x + w - 1, ACS_VLINE, h - 2);
    mvaddch(y + h - 1, x, ACS_LLCORNER);
    mvhline(y + h - 1, x + 1, ACS_HLINE, w - 2);
    mvaddch(y + h - 1, x + w - 1, ACS_LRCORNER);
    mvprintw(y, x + 2, " %.*s ", w - 6 > 0 ? w - 6 : 0, title);
}

/* Text clipped to n display columns (ASCII assumed past the glyphs). */
static void put(int y, int x, int n, const char *s)
{
    if (n > 0)
        mvaddnstr(y, x, s, n);
}

static void glyph(struct tui *t, int y, int x, const char *utf, char ascii)
{
    if (t->utf8)
        mvaddstr(y, x, utf);
    else
        mvaddch(y, x, (chtype)ascii);
}

static void draw_servers(struct tui *t, int y, int x, int h, int w)
{
    frame(y, x, h, w, "Servers");
    int rows = h - 2, n = (int)json_array_size(t->servers);
    int top = t->sel[0] >= rows ? t->sel[0] - rows + 1 : 0;
    for (int i = top; i < n && i - top < rows; i++) {
        json_t *s = json_array_get(t->servers, (size_t)i);
        int row = y + 1 + i - top, hl = i == t->sel[0] && t->pane == 0;
        if (hl)
            attron(A_REVERSE);
        mvhline(row, x + 1, ' ', w - 2);
        if (i == t->sel[0])
            glyph(t, row, x + 1, "▸", '>');
        int conn = json_is_true(json_object_get(s, "connected"));
        glyph(t, row, x + 3, conn ? "●" : "○", conn ? '*' : 'o');
        char line[256];
        int nw = w - 25 > 6 ? w - 25 : 6;
        snprintf(line, sizeof(line), "%-*.*s %-6s def:%-3s%3dt", nw, nw, jstr(s, "name", "?"),
                 jstr(s, "type", "?"), json_is_true(json_object_get(s, "default")) ? "on" : "off",
                 (int)json_integer_value(json_object_get(s, "tools")));
        put(row, x + 5, w - 6, line);
        if (hl)
            attroff(A_REVERSE);
    }
    if (!n)
        put(y + 1, x + 2, w - 4, "(no servers in the config)");
}

static void draw_tools(struct tui *t, int y, int x, int h, int w)
{
    json_t *s = selected_server(t);
    char title[200];
    snprintf(title, sizeof(title), "Tools %s %s%s%s%s", t->utf8 ? "—" : "-", jstr(s, "name", ""),
             t->filter[0] ? " [/" : "", t->filter, t->filter[0] ? "]" : "");
    frame(y, x, h, w, title);
    json_t *vis = visible_tools(t);
    int rows = h - 2, n = (int)json_array_size(vis);
    if (t->sel[1] >= n)
        t->sel[1] = n ? n - 1 : 0;
    int top = t->sel[1] >= rows ? t->sel[1] - rows + 1 : 0;
    for (int i = top; i < n && i - top < rows; i++) {
        json_t *x_ = json_array_get(vis, (size_t)i);
        int row = y + 1 + i - top, hl = i == t->sel[1] && t->pane == 1;
        int dim = !json_is_true(json_object_get(s, "connected")); /* its server is off */
        if (hl)
            attron(A_REVERSE);
        if (dim)
            attron(A_DIM);
        mvhline(row, x + 1, ' ', w - 2);
        if (i == t->sel[1])
            glyph(t, row, x + 1, "▸", '>');
        const char *session = jstr(x_, "session", NULL);
        char flags[8] = "";
        if (session)
            strcat(flags, "(s)");
        if (!json_is_true(json_object_get(x_, "default")))
            strcat(flags, "(d)");
        char line[512], name[200];
        int nw = w - 18 < 28 ? w - 18 : 28;
        snprintf(name, sizeof(name), "%.*s%s", nw - (int)strlen(flags), jstr(x_, "tool", "?"),
                 flags);
        snprintf(line, sizeof(line), "%-3s %-*s %s",
                 json_is_true(json_object_get(x_, "on")) ? "ON" : "off", nw, name,
                 jstr(x_, "summary", ""));
        put(row, x + 3, w - 4, line);
        attroff(A_REVERSE | A_DIM);
    }
    if (!n)
        put(y + 1, x + 2, w - 4,
            t->filter[0] ? "(no tool matches the filter)"
            : json_is_true(json_object_get(s, "connected"))
                ? "(no tools)"
                : "(tools not known yet: Space connects the server)");
    json_decref(vis);
}

static void draw_status(struct tui *t)
{
    char line[1024];
    const char *cfg = jstr(t->inst, "config", "(no config)");
    /* Too long for the terminal: the config path's last two components, then none (the
     * outcome of the last action matters more). */
    for (int pass = 0; pass < 3; pass++) {
        snprintf(line, sizeof(line), " [%s] pid %d %s%s%s%s", jstr(t->inst, "label", "?"),
                 (int)json_integer_value(json_object_get(t->inst, "pid")), pass == 1 ? "…" : "",
                 pass == 2 ? "" : cfg, pass == 2 ? "" : "  ", t->status);
        if ((int)strlen(line) <= COLS)
            break;
        const char *p = strrchr(cfg, '/');
        while (p && p > cfg && p[-1] != '/')
            p--;
        if (p && p > cfg)
            cfg = p - 1;
    }
    mvhline(LINES - 2, 0, ' ', COLS);
    put(LINES - 2, 0, COLS, line);
    attron(A_BOLD);
    mvhline(LINES - 1, 0, ' ', COLS);
    put(LINES - 1, 0, COLS,
        " Space:session D:default Tab:pane j/k:move /:filter r:refresh ?:help q:quit");
    attroff(A_BOLD);
}

static void draw_gone(struct tui *t)
{
    erase();
    attron(A_BOLD);
    put(1, 2, COLS - 4, "codemcp tui: the gateway cannot be reached");
    attroff(A_BOLD);
    int y = 3;
    const char *p = t->gone;
    while (*p && y < LINES - 3) { /* the reason may hold several lines (a list of gateways) */
        size_t n = strcspn(p, "\n"), w = COLS > 8 ? (size_t)COLS - 4 : 4;
        if (n > w) { /* wrap long lines, at a space when there is one */
            size_t cut = w;
            while (cut > w / 2 && p[cut] != ' ')
                cut--;
            n = p[cut] == ' ' ? cut : w;
            mvaddnstr(y++, 2, p, (int)n);
            p += n + (p[n] == ' ');
            continue;
        }
        mvaddnstr(y++, 2, p, (int)n);
        p += n + (p[n] == '\n');
    }
    put(LINES - 2, 2, COLS - 4, "r: try again    q: quit");
    refresh();
}

static void draw_help(void)
{
    static const char *lines[] = {
        "codemcp tui — keys",
        "",
        "Space   servers: connect / disconnect now; tools: on / off for this run",
        "D       toggle the default (written into mcp.json, comments kept)",
        "Tab     switch between the servers and the tools pane",
        "j k     move (also the arrow keys, PgUp/PgDn, g/G)",
        "/       filter the tools by name or summary (Enter keeps, Esc clears)",
        "r       re-read the state now (it is re-read every 2 s)",
        "q       quit",
        "",
        "Tools: ON/off = what the model sees now; (s) = a session override;",
        "(d) = off by default in mcp.json.  Any key closes this help.",
    };
    erase();
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]) && (int)i + 1 < LINES; i++)
        put((int)i + 1, 2, COLS - 4, lines[i]);
    refresh();
}

static void draw(struct tui *t)
{
    if (t->gone[0]) {
        draw_gone(t);
        return;
    }
    erase();
    if (COLS < 40 || LINES < 8) {
        put(0, 0, COLS, "terminal too small for codemcp tui (needs 40x8)");
        refresh();
        return;
    }
    int n = (int)json_array_size(t->servers);
    if (t->sel[0] >= n)
        t->sel[0] = n ? n - 1 : 0;
    int lw = COLS * 38 / 100 < 36 ? 36 : COLS * 38 / 100;
    if (lw > COLS / 2)
        lw = COLS / 2;
    int h = LINES - 2;
    draw_servers(t, 0, 0, h, lw);
    draw_tools(t, 0, lw, h, COLS - lw);
    draw_status(t);
    refresh();
}

/* ---- input ------------------------------------------------------------------------------- */

static void read_filter(struct tui *t)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", t->filter);
    timeout(-1);
    curs_set(1);
    for (;;) {
        mvhline(LINES - 2, 0, ' ', COLS);
        mvprintw(LINES - 2, 0, " filter tools: %s", buf);
        refresh();
        int ch = getch();
        size_t len = strlen(buf);
        if (ch == '\n' || ch == KEY_ENTER || ch == '\r')
            break;
        if (ch == 27) {
            buf[0] = 0;
            break;
        }
        if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && len)
            buf[len - 1] = 0;
        else if (ch >= 32 && ch < 127 && len + 1 < sizeof(buf)) {
            buf[len] = (char)ch;
            buf[len + 1] = 0;
        }
    }
    curs_set(0);
    timeout(REFRESH_MS);
    snprintf(t->filter, sizeof(t->filter), "%s", buf);
    t->sel[1] = 0;
    snprintf(t->status, sizeof(t->status), "%s", buf[0] ? "filter set" : "filter cleared");
}

static void sel_move(struct tui *t, int delta)
{
    int n;
    if (t->pane == 0) {
        n = (int)json_array_size(t->servers);
    } else {
        json_t *vis = visible_tools(t);
        n = (int)json_array_size(vis);
        json_decref(vis);
    }
    int v = t->sel[t->pane] + delta;
    if (v >= n)
        v = n - 1;
    if (v < 0)
        v = 0;
    if (t->pane == 0 && v != t->sel[0])
        t->sel[1] = 0;
    t->sel[t->pane] = v;
}

static void usage(FILE *f)
{
    fputs("usage: codemcp tui [-i LAUNCHER|PID|CONFIG-SUBSTRING]\n\n"
          "Full-screen control of a running gateway: servers on the left, the selected\n"
          "server's tools on the right. Space toggles for this run, D toggles the default\n"
          "(mcp.json), Tab switches panes, j/k move, / filters, r refreshes, ? help, q quits.\n\n"
          "  -i, --instance SEL   the gateway (needed when several run; see `codemcp instances`)\n"
          "  -h, --help           this help\n",
          f);
}

int tui_main(const struct settings *s, int argc, char **argv)
{
    static const struct option opts[] = {
        {"instance", required_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct tui t = {.admin_socket = s->admin_socket};
    int o;
    optind = 0;
    while ((o = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
        if (o == 'i') {
            t.selector = optarg;
        } else if (o == 'h') {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "codemcp tui: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!isatty(0) || !isatty(1)) {
        fprintf(stderr,
                "codemcp tui: needs a terminal (use `codemcp list` / `tools` in scripts)\n");
        return 2;
    }
    if (attach(&t) < 0) { /* nothing to show: say why on the plain terminal */
        fprintf(stderr, "codemcp tui: %s\n", t.gone);
        return 1;
    }
    setlocale(LC_ALL, "");
    const char *cs = setlocale(LC_CTYPE, NULL);
    t.utf8 = cs && (strstr(cs, "UTF-8") || strstr(cs, "utf8") || strstr(cs, "UTF8"));
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(REFRESH_MS);
    set_escdelay(50);
    snprintf(t.status, sizeof(t.status), "connected to the gateway");
    refresh_state(&t);
    int help = 0;
    for (;;) {
        if (help)
            draw_help();
        else
            draw(&t);
        int ch = getch();
        if (help && ch != ERR && ch != KEY_RESIZE) {
            help = 0;
            continue;
        }
        if (ch == 'q' || ch == 'Q')
            break;
        if (t.gone[0]) {
            if (ch == 'r' && attach(&t) == 0)
                refresh_state(&t);
            continue;
        }
        switch (ch) {
        case ERR: /* the 2 s tick */
        case 'r':
            refresh_state(&t);
            if (ch == 'r')
                snprintf(t.status, sizeof(t.status), "refreshed");
            break;
        case KEY_RESIZE:
            break;
        case '\t':
        case KEY_BTAB:
            t.pane = !t.pane;
            break;
        case 'j':
        case KEY_DOWN:
            sel_move(&t, 1);
            break;
        case 'k':
        case KEY_UP:
            sel_move(&t, -1);
            break;
        case KEY_NPAGE:
            sel_move(&t, LINES / 2);
            break;
        case KEY_PPAGE:
            sel_move(&t, -LINES / 2);
            break;
        case 'g':
        case KEY_HOME:
            sel_move(&t, -100000);
            break;
        case 'G':
        case KEY_END:
            sel_move(&t, 100000);
            break;
        case KEY_LEFT:
        case 'h':
            t.pane = 0;
            break;
        case KEY_RIGHT:
        case 'l':
            t.pane = 1;
            break;
        case ' ':
            toggle(&t, 0);
            break;
        case 'D':
            toggle(&t, 1);
            break;
        case '/':
            read_filter(&t);
            break;
        case '?':
            help = 1;
            break;
        default:
            break;
        }
    }
    endwin();
    json_decref(t.inst);
    json_decref(t.servers);
    json_decref(t.tools);
    return 0;
}
