/* setup — one-time adoption of a harness's MCP servers (`codemcp setup opencode`, and in
 * setup_clients.c `claude-desktop`, `cursor`, `vscode`). */
#ifndef CODEMCP_SETUP_H
#define CODEMCP_SETUP_H

/* argv: the words after `setup`. codemcp_config: -c given before `setup`, or NULL.
 * Returns the process exit status (0 done or nothing to do, 1 failed, 2 usage). */
int setup_main(int argc, char **argv, const char *codemcp_config);

#include <jansson.h>

/* setup_clients.c: `setup claude-desktop | cursor | vscode` (file: --file or NULL). Returns the
 * exit status, or -1 for an unknown target. */
int setup_clients_main(const char *target, const char *file, const char *codemcp_config,
                       int dry_run);
/* The command a harness should run: this binary's absolute path (said on stdout). New array. */
json_t *setup_launch_command(const char *harness);
/* Rewrites opencode's top-level and per-agent "tools" settings that name tools of the moved
 * servers (moved: name -> entry, entries edited in place). 1 when something changed. */
int setup_fix_opencode_tools(json_t *oc_root, json_t *moved);
/* Copies path's bytes to path.bak.<UTC time>[-k] (0600, never over an existing file); writes
 * the backup's name to out. 0 / -1 (errno set). Shared by both setup files. */
int setup_backup(const char *path, char *out, size_t n);

#endif
