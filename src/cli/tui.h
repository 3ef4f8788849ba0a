/* tui — `codemcp tui`, the full-screen control of a running gateway (ncurses). Only built when
 * the `tui` meson option finds ncurses (CODEMCP_TUI is then defined). */
#ifndef CODEMCP_TUI_H
#define CODEMCP_TUI_H

/* argv[0] is "tui". Returns the exit status. */
struct settings;
int tui_main(const struct settings *s, int argc, char **argv);

#endif
