/* Unit tests for src/catalog/policy.c: per-tool, per-server and global rules, fail-closed. */
#include "config.h"
#include "policy.h"

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *doc =
    "{\"policy\": {\"deny\": [\"filesystem_write_*\"]},\n"
    " \"mcp\": {\n"
    "  \"filesystem\": {\"type\": \"local\", \"command\": [\"x\"],\n"
    "     \"tools\": {\"write_file\": {\"policy\": \"allow\"}, \"move_file\": {\"policy\": "
    "\"deny\"},\n"
    "                 \"odd\": {\"policy\": \"maybe\"}}},\n"
    "  \"memory\": {\"type\": \"local\", \"command\": [\"x\"],\n"
    "     \"policy\": {\"allow\": [\"read_*\", \"search_*\"], \"deny\": [\"read_secret\"]}},\n"
    "  \"broken\": {\"type\": \"local\", \"command\": [\"x\"], \"policy\": {\"deny\": \"all\"}},\n"
    "  \"open\": {\"type\": \"local\", \"command\": [\"x\"]}\n"
    " }}\n";

static struct policy_decision last;

static int allows(const char *server, const char *tool)
{
    char fn[256];
    snprintf(fn, sizeof(fn), "%s_%s", server, tool);
    return policy_decide(&(struct policy_call){NULL, server, tool, fn, 0, 0, NULL, 0}, &last) ==
           POLICY_ALLOW;
}

int main(void)
{
    char path[] = "/tmp/codemcp-policy-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, doc, strlen(doc)) != (ssize_t)strlen(doc))
        return 2;
    close(fd);
    struct cfg cfg;
    char *err = NULL;
    if (cfg_load(path, &cfg, &err) < 0) {
        printf("FAIL: config: %s\n", err);
        return 1;
    }
    unlink(path);
    policy_init(&cfg);

    CHECK(allows("filesystem", "write_file"), "per-tool allow beats the global deny");
    CHECK(!allows("filesystem", "write_text"), "global deny glob over function names");
    CHECK(!allows("filesystem", "move_file"), "per-tool deny");
    CHECK(!allows("filesystem", "odd"), "malformed per-tool policy fails closed");
    CHECK(allows("filesystem", "read_file"), "unmatched tools are allowed");
    CHECK(allows("memory", "read_graph"), "server allow list");
    CHECK(!allows("memory", "create_entities"), "server allow list denies the rest");
    CHECK(!allows("memory", "read_secret"), "deny beats allow within a server");
    CHECK(!allows("broken", "anything"), "malformed server policy fails closed");
    CHECK(allows("open", "anything"), "no rules: allowed");
    allows("memory", "create_entities");
    CHECK(strstr(last.why, "allow list") != NULL, "reason names the rule: %s", last.why);

    cfg_free(&cfg);
    free(err);
    return CHECK_DONE();
}
