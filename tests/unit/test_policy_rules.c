/* Unit tests for the ordered policy rules (src/catalog/policy_rules.c, linear_re.c): every
 * matcher with hostile values (path traversal, look-alike names, huge values, deep paths,
 * patterns a backtracking engine would take exponential time on), first match wins, default
 * deny for a tool the rules name, and a broken rule that denies with its line. */
#include "config.h"
#include "policy.h"

#include "check.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *doc =
    "{\"policy\": {\"rules\": [\n"
    "  {\"name\": \"ci-own-org\", \"principal\": \"ci\", \"server\": \"github\",\n"
    "   \"tool\": \"create_*\", \"args\": {\"owner\": {\"eq\": \"acme\"}}, \"effect\": "
    "\"allow\"},\n"
    "  {\"name\": \"readers\", \"principal\": [\"intern*\"], \"write\": false, \"effect\": "
    "\"allow\"},\n"
    "  {\"name\": \"no-writes\", \"principal\": \"intern*\", \"effect\": \"deny\",\n"
    "   \"message\": \"interns may read but never write\"},\n"
    "  {\"name\": \"docs-only\", \"server\": \"fs\", \"tool\": \"write_file\",\n"
    "   \"args\": {\"path\": {\"under\": \"/repo/docs\"}}, \"effect\": \"allow\"},\n"
    "  {\"name\": \"select-only\", \"server\": \"db\", \"tool\": \"query\",\n"
    "   \"args\": {\"sql\": {\"regex\": \"\\\\s*select[^;]*;?\\\\s*\", \"ignore_case\": true}},\n"
    "   \"effect\": \"allow\"},\n"
    "  {\"name\": \"small-pages\", \"server\": \"db\", \"tool\": \"page\",\n"
    "   \"args\": {\"n\": {\"range\": [1, 100]}, \"order\": {\"one_of\": [\"asc\", \"desc\"]}},\n"
    "   \"effect\": \"allow\"},\n"
    "  {\"name\": \"deep\", \"server\": \"db\", \"tool\": \"deep\",\n"
    "   \"args\": {\"a.b[1][\\\"c.d\\\"]\": {\"glob\": \"ok-*\"}}, \"effect\": \"allow\"},\n"
    "  {\"name\": \"evil\", \"server\": \"db\", \"tool\": \"evil\",\n"
    "   \"args\": {\"s\": {\"regex\": \"(a*)*b\"}}, \"effect\": \"allow\"},\n"
    "  {\"name\": \"preview-deletes\", \"server\": \"fs\", \"tool\": \"delete_*\",\n"
    "   \"effect\": \"dry_run\"},\n"
    "  {\"name\": \"block-etc\", \"server\": \"fs\", \"tool\": \"read_file\",\n"
    "   \"args\": {\"path\": {\"under\": \"/etc\"}}, \"effect\": \"deny\"}\n"
    " ]},\n"
    " \"mcp\": {\"x\": {\"type\": \"local\", \"command\": [\"x\"]}}}\n";

static struct policy_decision d;

static int decide(const char *principal, const char *server, const char *tool, int mutation,
                  const char *args)
{
    char fn[256];
    snprintf(fn, sizeof(fn), "%s_%s", server, tool);
    return policy_decide(&(struct policy_call){principal, server, tool, fn, mutation, 0, args,
                                               args ? strlen(args) : 0},
                         &d);
}

static int load(const char *text, struct cfg *cfg)
{
    char path[] = "/tmp/codemcp-policy-rules-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        return -1;
    close(fd);
    char *err = NULL;
    int rc = cfg_load(path, cfg, &err);
    free(err);
    if (rc == 0)
        policy_init(cfg);
    unlink(path);
    return rc;
}

static void huge_and_backtracking(void)
{
    /* 1 MB of 'a' against (a*)*b: exponential for a backtracking engine, linear here */
    size_t n = 1 << 20;
    char *args = malloc(n + 16);
    memcpy(args, "{\"s\": \"", 7);
    memset(args + 7, 'a', n);
    memcpy(args + 7 + n, "\"}", 3);
    CHECK(decide("p", "db", "evil", 0, args) == POLICY_DENY, "1 MB of a against (a*)*b: no match");
    args[7 + n - 1] = 'b';
    CHECK(decide("p", "db", "evil", 0, args) == POLICY_ALLOW, "1 MB of a then b: a match");
    /* a huge path: normalized in linear time, still confined */
    char *p = malloc(n * 3 + 64);
    strcpy(p, "{\"path\": \"/repo/docs");
    size_t at = strlen(p);
    for (size_t i = 0; i < n / 3; i++, at += 3)
        memcpy(p + at, "/..", 3);
    strcpy(p + at, "/etc/passwd\"}");
    CHECK(decide("p", "fs", "write_file", 1, p) == POLICY_DENY, "300k .. components: denied");
    free(p);
    free(args);
}

int main(void)
{
    struct cfg cfg;
    if (load(doc, &cfg) < 0) {
        printf("FAIL: config\n");
        return 1;
    }
    /* principal, server, tool globs; first match wins */
    CHECK(decide("ci", "github", "create_issue", 1, "{\"owner\": \"acme\"}") == POLICY_ALLOW,
          "ci may create in its org: %s", d.why);
    CHECK(!strcmp(d.rule, "ci-own-org"), "named rule: %s", d.rule);
    CHECK(decide("ci", "github", "create_issue", 1, "{\"owner\": \"other\"}") == POLICY_DENY,
          "not another org");
    CHECK(strstr(d.why, "no policy rule allows github/create_issue") != NULL, "default deny: %s",
          d.why);
    CHECK(decide("ci", "github", "create_issue", 1, "{\"owner\": \"acme\\u0000x\"}") == POLICY_DENY,
          "an embedded NUL is not equal");
    CHECK(decide("ci", "github", "create_issue", 1, "{\"owner\": \"\\u0430cme\"}") == POLICY_DENY,
          "a Cyrillic look-alike owner is not acme");
    CHECK(decide("ci", "github", "create_issue", 1, "{}") == POLICY_DENY, "a missing owner");
    CHECK(decide("ci", "github", "create_issue", 1, "{\"owner\": [\"acme\"]}") == POLICY_DENY,
          "another type");
    CHECK(decide("сi", "github", "create_issue", 1, "{\"owner\": \"acme\"}") == POLICY_DENY,
          "a look-alike principal (Cyrillic с) is not ci");
    CHECK(decide("ci", "github", "list_issues", 0, NULL) == POLICY_DENY,
          "a rule without server or tool names every tool: default deny: %s", d.why);
    /* read/write */
    CHECK(decide("intern-7", "github", "list_issues", 0, NULL) == POLICY_ALLOW, "intern reads");
    CHECK(decide("intern-7", "github", "list_issues", 1, NULL) == POLICY_DENY, "intern writes");
    CHECK(strstr(d.why, "interns may read but never write") && !strcmp(d.rule, "no-writes"),
          "the message the model sees: %s", d.why);
    /* path prefix */
    CHECK(decide("p", "fs", "write_file", 1, "{\"path\": \"/repo/docs/a.md\"}") == POLICY_ALLOW,
          "under docs");
    CHECK(decide("p", "fs", "write_file", 1, "{\"path\": \"/repo/docs\"}") == POLICY_ALLOW,
          "docs itself");
    const char *escapes[] = {"/repo/docs/../src/x.c", "/repo/docs/../../etc/passwd",
                             "/repo/docsextra/a",     "//repo/docs/./../x",
                             "/repo/docs/..",         "repo/docs/a",
                             "/../repo/docs/a",       "",
                             "/repo/docs/a/../../b",  "/repo/docs\\u0000/a"};
    for (size_t i = 0; i < sizeof(escapes) / sizeof(*escapes); i++) {
        char a[200];
        snprintf(a, sizeof(a), "{\"path\": \"%s\"}", escapes[i]);
        CHECK(decide("p", "fs", "write_file", 1, a) == POLICY_DENY, "%s is not under /repo/docs",
              escapes[i]);
    }
    CHECK(decide("p", "fs", "write_file", 1, "{\"path\": \"/repo//docs/./x/../y\"}") ==
              POLICY_ALLOW,
          "// and . and .. inside stay under");
    /* a deny rule: a value it cannot judge denies */
    CHECK(decide("p", "fs", "read_file", 0, "{\"path\": \"/etc/../etc/shadow\"}") == POLICY_DENY,
          "/etc/../etc is /etc");
    CHECK(decide("p", "fs", "read_file", 0, "{\"path\": \"/../../etc/shadow\"}") == POLICY_DENY,
          "climbing above / is not judged: the deny rule applies: %s", d.why);
    CHECK(decide("p", "fs", "read_file", 0, "{\"path\": \"etc/shadow\"}") == POLICY_DENY,
          "a relative path: the deny rule applies");
    CHECK(decide("p", "fs", "read_file", 0, "{\"path\": \"/home/x\"}") == POLICY_DENY,
          "read_file is named by rules: anything not allowed is denied");
    /* regex */
    CHECK(decide("p", "db", "query", 0, "{\"sql\": \"SELECT * FROM t\"}") == POLICY_ALLOW,
          "select, any case");
    CHECK(decide("p", "db", "query", 0, "{\"sql\": \"select 1; drop table t\"}") == POLICY_DENY,
          "a second statement");
    CHECK(decide("p", "db", "query", 0, "{\"sql\": \"delete from t\"}") == POLICY_DENY, "delete");
    CHECK(decide("p", "db", "query", 0, "{\"sql\": \"xselect 1\"}") == POLICY_DENY,
          "the whole value must match");
    /* range, one_of */
    CHECK(decide("p", "db", "page", 0, "{\"n\": 100, \"order\": \"asc\"}") == POLICY_ALLOW,
          "in range");
    CHECK(decide("p", "db", "page", 0, "{\"n\": 101, \"order\": \"asc\"}") == POLICY_DENY,
          "past max");
    CHECK(decide("p", "db", "page", 0, "{\"n\": \"5\", \"order\": \"asc\"}") == POLICY_DENY,
          "a string is not a number");
    CHECK(decide("p", "db", "page", 0, "{\"n\": 1e999, \"order\": \"asc\"}") == POLICY_DENY,
          "an overflowing number");
    CHECK(decide("p", "db", "page", 0, "{\"n\": 5, \"order\": \"ASC\"}") == POLICY_DENY,
          "one_of is exact");
    /* an integer past 64 bits (the gateway keeps its digits): the matchers that look at it
     * cannot judge it, the others judge their own arguments */
    CHECK(decide("p", "db", "page", 0,
                 "{\"n\": 5, \"order\": \"asc\", \"cursor\": 1180591620717411303424}") ==
              POLICY_ALLOW,
          "a big integer beside the judged arguments: %s", d.why);
    CHECK(decide("p", "db", "page", 0, "{\"n\": 1180591620717411303424, \"order\": \"asc\"}") ==
              POLICY_DENY,
          "a big integer where range looks");
    CHECK(decide("p", "db", "query", 0, "{\"sql\": 1180591620717411303424}") == POLICY_DENY,
          "a big integer where a regex looks");
    CHECK(decide("p", "fs", "read_file", 0, "{\"path\": 1180591620717411303424}") == POLICY_DENY &&
              strstr(d.why, "block-etc"),
          "a deny rule that cannot judge its argument applies: %s", d.why);
    /* deep paths */
    CHECK(decide("p", "db", "deep", 0, "{\"a\": {\"b\": [0, {\"c.d\": \"ok-1\"}]}}") ==
              POLICY_ALLOW,
          "a.b[1][\"c.d\"]");
    CHECK(decide("p", "db", "deep", 0, "{\"a\": {\"b\": [{\"c.d\": \"ok-1\"}]}}") == POLICY_DENY,
          "index out of range");
    CHECK(decide("p", "db", "deep", 0, "{\"a\": {\"b\": [0, {\"c\": {\"d\": \"ok-1\"}}]}}") ==
              POLICY_DENY,
          "a dotted key is one key");
    /* dry_run */
    CHECK(decide("p", "fs", "delete_file", 1, NULL) == POLICY_DRY_RUN, "deletes are previewed");
    huge_and_backtracking();
    cfg_free(&cfg);

    /* a broken rule denies every call, and says where it is */
    const char *bad = "{\"policy\": {\"rules\": [\n"
                      "  {\"tool\": \"x\", \"effect\": \"allow\"},\n"
                      "  {\"tool\": \"y\",\n"
                      "   \"args\": {\"q\": {\"regex\": \"(a\"}}, \"effect\": \"allow\"}\n"
                      " ]},\n"
                      " \"mcp\": {\"x\": {\"type\": \"local\", \"command\": [\"x\"]}}}\n";
    CHECK(load(bad, &cfg) == 0, "loads");
    CHECK(decide("p", "s", "x", 0, NULL) == POLICY_ALLOW, "the rule before it still decides");
    CHECK(decide("p", "s", "other", 0, NULL) == POLICY_DENY, "the broken rule denies the rest");
    CHECK(strstr(d.why, "policy.rules[1]") && strstr(d.why, "line 3") &&
              strstr(d.why, "not closed"),
          "names the rule, its line and the error: %s", d.why);
    cfg_free(&cfg);
    const char *bads[] = {
        "{\"effect\": \"maybe\"}",
        "{\"effect\": \"allow\", \"tol\": \"x\"}",
        "{\"effect\": \"allow\", \"args\": {\"a..b\": {\"eq\": 1}}}",
        "{\"effect\": \"allow\", \"args\": {\"a\": {\"regex\": \"a\\\\1\"}}}",
        "{\"effect\": \"allow\", \"args\": {\"a\": {\"regex\": \"(a{100}){100}{100}\"}}}",
        "{\"effect\": \"allow\", \"args\": {\"a\": {\"under\": \"rel\"}}}",
        "{\"effect\": \"allow\", \"args\": {\"a\": {\"range\": [1]}}}",
        ("{\"effect\": \"allow\", \"args\": "
         "{\"a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a\": {\"eq\": 1}}}"),
    };
    for (size_t i = 0; i < sizeof(bads) / sizeof(*bads); i++) {
        char text[600];
        snprintf(text, sizeof(text),
                 "{\"policy\": {\"rules\": [%s]}, \"mcp\": {\"x\": {\"type\": \"local\", "
                 "\"command\": [\"x\"]}}}",
                 bads[i]);
        CHECK(load(text, &cfg) == 0 && decide("p", "s", "t", 0, "{\"a\": 1}") == POLICY_DENY &&
                  strstr(d.why, "invalid"),
              "%s is reported and denies: %s", bads[i], d.why);
        cfg_free(&cfg);
    }

    /* every budget that applies is checked, however many come before it: 70 budgets of a
     * thousand calls, then one of a single call */
    struct buf many = {0};
    buf_appends(&many, "{\"budgets\": [");
    for (int i = 0; i < 70; i++)
        buf_printf(&many,
                   "{\"name\": \"wide%d\", \"window_s\": 3600, \"calls\": 1000, "
                   "\"writes_per_run\": 1000},",
                   i);
    buf_appends(&many, "{\"name\": \"one-call\", \"window_s\": 3600, \"calls\": 1}], "
                       "\"mcp\": {\"x\": {\"type\": \"local\", \"command\": [\"x\"]}}}");
    CHECK(load(many.data, &cfg) == 0, "loads 71 budgets");
    char why[300] = "";
    struct policy_call w = {"p", "s", "t", "s_t", 1, 0, NULL, 0};
    CHECK(budgets_take(&w, "run-1", why, sizeof(why)) == 0, "the first call has room: %s", why);
    CHECK(budgets_take(&w, "run-1", why, sizeof(why)) < 0 && strstr(why, "one-call"),
          "the 71st budget refuses the second call: %s", why);
    CHECK(budgets_take_run("p", why, sizeof(why)) == 0, "runs are not limited by calls budgets");
    cfg_free(&cfg);
    buf_free(&many);
    return CHECK_DONE();
}
