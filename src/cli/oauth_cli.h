/* oauth_cli — the `codemcp auth` and `codemcp logout` subcommands (see oauth_cli.c). */
#ifndef CODEMCP_OAUTH_CLI_H
#define CODEMCP_OAUTH_CLI_H

/* argv: the arguments after the subcommand. Exit statuses. */
struct settings;
int oauth_auth_main(const struct settings *s, int argc, char **argv, const char *config_path);
int oauth_logout_main(const struct settings *s, int argc, char **argv, const char *config_path);

#endif
