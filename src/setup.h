/* setup — one-time adoption of a harness's MCP servers (`codemcp setup opencode`). */
#ifndef CODEMCP_SETUP_H
#define CODEMCP_SETUP_H

/* argv: the words after `setup`. codemcp_config: -c given before `setup`, or NULL.
 * Returns the process exit status (0 done or nothing to do, 1 failed, 2 usage). */
int setup_main(int argc, char **argv, const char *codemcp_config);

#endif
