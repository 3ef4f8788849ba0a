/* test_describe — the budgeted execute_python description and its overflow into the server
 * instructions (sdkgen/describe.c, sdk_describe_budget): the budget holds whatever the
 * catalog size, every server is named with its state, preferred functions come first, a big
 * server is shown by groups, and the rest is announced. */
#include "check.h"
#include "sdkgen.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A catalog of `n` tools on server "big" (names like area7_do_thing_42) plus `small` tools on
 * server "tiny"; servers[] gets "late" as connecting and "bad" as failed. */
static json_t *catalog(int n, int small, json_t **servers_out)
{
    json_t *big = json_array(), *tiny = json_array();
    for (int i = 0; i < n; i++) {
        char name[64], desc[96];
        snprintf(name, sizeof name, "area%d_do_thing_%d", i % 23, i);
        snprintf(desc, sizeof desc, "Do thing number %d in area %d of the big API.", i, i % 23);
        json_array_append_new(big,
                              json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}}, s:[s]}}", "name",
                                        name, "description", desc, "inputSchema", "type", "object",
                                        "properties", "owner", "type", "string", "count", "type",
                                        "integer", "required", "owner"));
    }
    for (int i = 0; i < small; i++) {
        char name[32];
        snprintf(name, sizeof name, "tool%d", i);
        json_array_append_new(
            tiny, json_pack("{s:s, s:s}", "name", name, "description", "A small tool."));
    }
    *servers_out = json_pack(
        "[{s:s, s:s, s:i}, {s:s, s:s, s:i}, {s:s, s:s, s:i}, {s:s, s:s, s:i}]", "server", "big",
        "state", "ready", "tools", n, "server", "tiny", "state", "ready", "tools", small, "server",
        "late", "state", "connecting", "tools", 0, "server", "bad", "state", "failed", "tools", 0);
    return json_pack("[{s:s, s:o}, {s:s, s:o}]", "server", "big", "tools", big, "server", "tiny",
                     "tools", tiny);
}

static void budget_case(int n, size_t budget)
{
    json_t *servers = NULL, *input = catalog(n, 5, &servers);
    struct sdk_output out;
    EXPECT(sdk_generate(input, NULL, &out) == 0);
    char *desc = NULL, *instr = NULL;
    sdk_describe_budget(out.functions, out.signatures, servers, NULL, budget, 2000, &desc, &instr);
    EXPECT(desc && strlen(desc) <= budget);
    EXPECT(instr && strlen(instr) <= 2000);
    EXPECT(strstr(desc, "big ") && strstr(desc, "tiny 5") && strstr(desc, "late (connecting)") &&
           strstr(desc, "bad (failed)"));
    EXPECT(strstr(desc, "search_tools("));
    EXPECT(strstr(desc, "Servers still connecting"));
    EXPECT(strstr(desc, "Functions (signature  # summary):\n"));
    if (n > 100) {
        EXPECT(strstr(desc, "more not listed"));
        EXPECT(strstr(desc, "(by group)") || strstr(instr, "big_"));
    }
    EXPECT(strstr(instr, "late (connecting)"));
    if (strlen(desc) > budget || !strstr(desc, "Servers ("))
        fprintf(stderr, "  n=%d budget=%zu: %zu bytes\n%s\n", n, budget, strlen(desc), desc);
    free(desc);
    free(instr);
    sdk_output_free(&out);
    json_decref(input);
    json_decref(servers);
}

static void case_budget_small(void)
{
    budget_case(12, 2000);
}

static void case_budget_large(void)
{
    budget_case(1500, 2000);
    budget_case(1500, 1200);
    budget_case(1500, 8000);
}

/* Preferred functions (most used) get their signatures first; every shown function is still
 * named once. */
static void case_priority(void)
{
    json_t *servers = NULL, *input = catalog(300, 3, &servers);
    struct sdk_output out;
    EXPECT(sdk_generate(input, NULL, &out) == 0);
    json_t *prio = json_pack("[s,s,s]", "big_area5_do_thing_281", "no_such_fn", "tiny_tool2");
    char *desc = NULL;
    sdk_describe_budget(out.functions, out.signatures, servers, prio, 2000, 2000, &desc, NULL);
    const char *sigs = strstr(desc, "Functions (signature  # summary):\n");
    EXPECT(sigs);
    if (sigs) {
        sigs += strlen("Functions (signature  # summary):\n");
        EXPECT(strncmp(sigs, "big_area5_do_thing_281(owner: str, count: int | None = None)",
                       strlen("big_area5_do_thing_281(")) == 0);
        const char *second = strchr(sigs, '\n');
        EXPECT(second && strncmp(second + 1, "tiny_tool2(", 11) == 0);
    }
    EXPECT(!strstr(desc, "no_such_fn"));
    /* The full listing's default return type is left out of budget lines. */
    EXPECT(!strstr(desc, "-> Any  #")); /* the type that says nothing is left out */
    free(desc);
    json_decref(prio);
    sdk_output_free(&out);
    json_decref(input);
    json_decref(servers);
}

static void case_empty(void)
{
    json_t *servers =
        json_pack("[{s:s, s:s, s:i}]", "server", "late", "state", "connecting", "tools", 0);
    json_t *input = json_array();
    struct sdk_output out;
    EXPECT(sdk_generate(input, NULL, &out) == 0);
    char *desc = NULL, *instr = NULL;
    sdk_describe_budget(out.functions, out.signatures, servers, NULL, 2000, 2000, &desc, &instr);
    EXPECT(strstr(desc, "Servers (0 functions): late (connecting)."));
    EXPECT(strstr(desc, "(no upstream tools connected yet)"));
    char *note = sdk_servers_note(servers);
    EXPECT(
        strcmp(note, "\nNot ready: late (connecting); their functions appear when they connect.") ==
        0);
    free(note);
    free(desc);
    free(instr);
    sdk_output_free(&out);
    json_decref(input);
    json_decref(servers);
}

int main(void)
{
    check_case("budget holds, 17 functions", case_budget_small);
    check_case("budget holds, 1,505 functions, budgets 1,200 / 2,000 / 8,000", case_budget_large);
    check_case("preferred functions first", case_priority);
    check_case("no functions yet", case_empty);
    return CHECK_DONE();
}
