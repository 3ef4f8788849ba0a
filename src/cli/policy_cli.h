/* policy_cli — `codemcp policy check`: explains which policy rule decides a call. */
#ifndef CODEMCP_POLICY_CLI_H
#define CODEMCP_POLICY_CLI_H

/* argv[0] is "check". Returns the exit status (0 allowed, 1 denied, 2 usage or config). */
int policy_cli_main(int argc, char **argv, const char *config_path);

#endif
