/* admin_cli — the admin commands: `codemcp list | enable | disable | tools | enable-tool |
 * disable-tool | instances` (and `tui`, which lives in tui.c). Each talks to one running
 * gateway over its admin socket (admin_client.h) and prints a table, or JSON with --json. */
#ifndef CODEMCP_ADMIN_CLI_H
#define CODEMCP_ADMIN_CLI_H

/* 1 when name is an admin command (then admin_cli_main handles it). */
int admin_cli_is_command(const char *name);
/* argv[0] is the command name. Returns the exit status (0 ok, 1 failed, 2 usage). */
struct settings;
int admin_cli_main(const struct settings *s, int argc, char **argv);

#endif
