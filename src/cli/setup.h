/* setup — `codemcp setup HARNESS` (adopt a harness's MCP servers, or undo that) and
 * `codemcp init` (a commented starter mcp.json). The pieces are in setup_int.h. */
#ifndef CODEMCP_SETUP_H
#define CODEMCP_SETUP_H

/* argv: the words after `setup` / `init`. codemcp_config: -c given before the command, or NULL.
 * Return the process exit status (0 done or nothing to do, 1 failed, 2 usage). */
struct settings;
int setup_main(const struct settings *s, int argc, char **argv, const char *codemcp_config);
int init_main(const struct settings *s, int argc, char **argv, const char *codemcp_config);

#endif
