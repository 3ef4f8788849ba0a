/* test_sdkgen — sdkgen against real tool lists (tests/data/tools/<server>.json, dumped from the
 * pinned npm servers by tests/tools/dump-tools.mjs) and a hostile corpus.
 *
 * Golden files live in tests/data/sdkgen/<name>.{py,txt,functions.json};
 * CODEMCP_UPDATE_GOLDEN=1 rewrites them (review the diff!). Every generated module is also
 * compiled and executed by /usr/bin/python3 against a stub codemcp_rt.client whose call()
 * returns its arguments, and every function is called. Prints one line per case; exits
 * non-zero if any case failed. */
#include "check.h"
#include "sdkgen.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char data_dir[4096];

#define EXPECT_STR(got, want)                                                                      \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (!g_ || strcmp(g_, w_) != 0) {                                                          \
            fprintf(stderr, "  %s:%d: got \"%s\", want \"%s\"\n", __FILE__, __LINE__,              \
                    g_ ? g_ : "(null)", w_);                                                       \
            case_failed = 1;                                                                       \
        }                                                                                          \
    } while (0)

/* The servers array for a data file: a dump ({"server", "tools"}) is wrapped, the hostile
 * corpus carries {"servers": [...]}. NUL bytes in strings are allowed on purpose. */
static json_t *load_servers(const char *file)
{
    char path[4200];
    json_error_t err;
    snprintf(path, sizeof path, "%s/tools/%s", data_dir, file);
    json_t *doc = json_load_file(path, JSON_ALLOW_NUL, &err);
    if (!doc) {
        fprintf(stderr, "  cannot load %s: %s (line %d)\n", path, err.text, err.line);
        return NULL;
    }
    json_t *servers = json_object_get(doc, "servers");
    if (servers)
        servers = json_incref(servers);
    else
        servers = json_pack("[O]", doc);
    json_decref(doc);
    return servers;
}

static int generate(const char *file, json_t *shapes, struct sdk_output *out)
{
    json_t *servers = load_servers(file);
    memset(out, 0, sizeof *out);
    int rc = servers ? sdk_generate(servers, shapes, out) : -1;
    json_decref(servers);
    return rc;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t n = strlen(text);
    int rc = fwrite(text, 1, n, f) == n ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

/* Compares text with tests/data/sdkgen/<file>, or rewrites the file under
 * CODEMCP_UPDATE_GOLDEN=1. */
static void golden(const char *file, const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/sdkgen/%s", data_dir, file);
    const char *update = getenv("CODEMCP_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        EXPECT(write_file(path, text) == 0);
        return;
    }
    size_t len;
    char *want = read_file(path, &len);
    if (!want) {
        fprintf(stderr, "  missing golden %s (run with CODEMCP_UPDATE_GOLDEN=1)\n", path);
        case_failed = 1;
        return;
    }
    if (strcmp(want, text) != 0) {
        size_t i = 0;
        while (want[i] && want[i] == text[i])
            i++;
        fprintf(stderr, "  %s differs at byte %zu: got \"%.60s\" want \"%.60s\"\n", path, i,
                text + i, want + i);
        case_failed = 1;
    }
    free(want);
}

/* ---- the Python check ------------------------------------------------------------------- */

/* argv: sdk.py, functions.json, stub dir, expectations JSON ({fn: [substrings of __doc__]}).
 * Compiles and executes the module, then calls every function: required parameters arrive
 * under their schema keys, optional ones only when not None, the timeout lands in call()'s
 * last argument, and unknown keywords raise TypeError unless the tool allows extras. */
static const char py_check[] =
    "import sys, json, inspect, keyword\n"
    "src_path, fn_path, stub_dir, expect = sys.argv[1:5]\n"
    "sys.path.insert(0, stub_dir)\n"
    "src = open(src_path, encoding='utf-8').read()\n"
    "code = compile(src, src_path, 'exec')\n"
    "ns = {'__name__': 'sdk'}\n"
    "exec(code, ns)\n"
    "fns = json.load(open(fn_path, encoding='utf-8'))\n"
    "meta = ns['__codemcp_meta__']\n"
    "assert list(meta) == list(fns), ('meta', list(meta), list(fns))\n"
    "assert ns['__all__'] == list(fns), '__all__ order'\n"
    "assert len(set(ns['__all__'])) == len(fns), 'names not unique'\n"
    "for name, f in fns.items():\n"
    "    assert name.isidentifier() and not keyword.iskeyword(name), name\n"
    "    assert not keyword.issoftkeyword(name), name\n"
    "    assert meta[name] == {'server': f['server'], 'tool': f['tool'],\n"
    "                          'mutation': f['mutation']}, name\n"
    "    fn = ns[name]\n"
    "    names = [p['name'] for p in f['params']]\n"
    "    assert len(set(names)) == len(names), name\n"
    "    sig = list(inspect.signature(fn).parameters)\n"
    "    assert sig[:len(names)] == names and sig[len(names)] == f['timeout_param'], (name, sig)\n"
    "    req = {p['name']: 'v%d' % i for i, p in enumerate(f['params']) if p['required']}\n"
    "    want = {p['key']: 'v%d' % i for i, p in enumerate(f['params']) if p['required']}\n"
    "    got = fn(**req)\n"
    "    assert got == (f['server'], f['tool'], want, None), (name, got)\n"
    "    none = {p['name']: None for p in f['params'] if not p['required']}\n"
    "    assert fn(**req, **none)[2] == want, name\n"
    "    for p in f['params']:\n"
    "        if not p['required']:\n"
    "            assert fn(**req, **{p['name']: 'o'})[2] == {**want, p['key']: 'o'}, name\n"
    "    assert fn(**req, **{f['timeout_param']: 1234})[3] == 1234, name\n"
    "    try:\n"
    "        r = fn(**req, zz_unknown=1)\n"
    "        assert f['extra'] and r[2] == {**want, 'zz_unknown': 1}, name\n"
    "    except TypeError:\n"
    "        assert not f['extra'], name\n"
    "    if req:\n"
    "        try:\n"
    "            fn()\n"
    "            raise AssertionError('missing required accepted: ' + name)\n"
    "        except TypeError:\n"
    "            pass\n"
    "for name, parts in json.loads(expect).items():\n"
    "    for part in parts:\n"
    "        assert part in (ns[name].__doc__ or ''), (name, part, ns[name].__doc__)\n"
    "if 'everything_get_sum' in ns:\n"
    "    s = ns['everything_get_sum']\n"
    "    assert s(1, 2) == ('everything', 'get-sum', {'a': 1, 'b': 2}, None), s(1, 2)\n"
    "    try:\n"
    "        s(1, 2, c=3)\n"
    "        raise AssertionError('unknown kwarg accepted')\n"
    "    except TypeError:\n"
    "        pass\n"
    "print('python: %d functions ok' % len(fns))\n";

static const char py_stub[] = "def call(server, tool, args, timeout_ms=None):\n"
                              "    return (server, tool, args, timeout_ms)\n";

/* Runs py_check over out; returns the exit status of python (0 = all good). */
static int python_check(const struct sdk_output *out, const char *expect)
{
    char dir[] = "/tmp/test_sdkgen.XXXXXX", p_src[128], p_fns[128], p_pkg[128], p_init[160],
         p_client[160];
    int status = -1;
    if (!mkdtemp(dir))
        return -1;
    snprintf(p_src, sizeof p_src, "%s/sdk.py", dir);
    snprintf(p_fns, sizeof p_fns, "%s/functions.json", dir);
    snprintf(p_pkg, sizeof p_pkg, "%s/codemcp_rt", dir);
    snprintf(p_init, sizeof p_init, "%s/__init__.py", p_pkg);
    snprintf(p_client, sizeof p_client, "%s/client.py", p_pkg);
    char *fns = json_dumps(out->functions, JSON_INDENT(1));
    if (write_file(p_src, out->source) < 0 || write_file(p_fns, fns) < 0 ||
        mkdir(p_pkg, 0700) < 0 || write_file(p_init, "") < 0 || write_file(p_client, py_stub) < 0)
        goto done;
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[] = {"/usr/bin/python3", "-I", "-c", (char *)py_check, p_src, p_fns, dir,
                        (char *)expect,     NULL};
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid > 0 && waitpid(pid, &status, 0) == pid)
        status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
done:
    free(fns);
    unlink(p_client);
    unlink(p_init);
    char cache[200];
    snprintf(cache, sizeof cache, "rm -rf '%s'", dir); /* __pycache__ and friends */
    if (system(cache) != 0)
        fprintf(stderr, "  could not remove %s\n", dir);
    return status;
}

/* ---- cases ------------------------------------------------------------------------------ */

static void check_generated(const char *name, const char *file, json_t *shapes, const char *expect)
{
    struct sdk_output out;
    char path[256];
    EXPECT(generate(file, shapes, &out) == 0);
    if (!out.source)
        return;
    snprintf(path, sizeof path, "%s.py", name);
    golden(path, out.source);
    snprintf(path, sizeof path, "%s.txt", name);
    golden(path, out.description);
    char *fns = json_dumps(out.functions, JSON_INDENT(2));
    struct buf b = {0};
    buf_printf(&b, "%s\n", fns);
    snprintf(path, sizeof path, "%s.functions.json", name);
    golden(path, b.data);
    buf_free(&b);
    free(fns);
    EXPECT(python_check(&out, expect) == 0);
    sdk_output_free(&out);
}

static void case_everything(void)
{
    check_generated("everything", "everything.json", NULL, "{}");
}

static void case_memory(void)
{
    check_generated("memory", "memory.json", NULL, "{}");
}

static void case_filesystem(void)
{
    check_generated("filesystem", "filesystem.json", NULL, "{}");
}

static void case_hostile(void)
{
    json_t *shapes =
        json_pack("{s:s,s:s}", "hostile__2fa", "{id: int,\n  name: str}\n# injected line\x01",
                  "not_a_function", "{x: int}");
    check_generated("hostile", "hostile.json", shapes,
                    "{\"hostile_class_\": [\"\\\"\\\"\\\"\", \"then \\\\ a backslash\", "
                    "\"C:\\\\path\\\\to\\\\new\", \"\\\\N{BULLET}\", \"\\\\x41\", "
                    "\"trailing quote\\\"\", \"\\\"\\\"\\\"\\\"\\\"\\\"\", "
                    "\"Windows line.\\n    Old Mac line.\"],"
                    " \"hostile__2fa\": [\"Control chars:NULBEL[31mANSI[0m\", "
                    "\"\\u2603 \\u65e5\\u672c \\ud834\\udd1e end\\\\\"],"
                    " \"hostile_drop_table___\": [\"\\\"\\\"\\\"\"]}");
    json_decref(shapes);
}

/* The renderer's hostile schemas (tests/data/tools/schemas.json): golden files, the module
 * compiles and runs, and the exact texts that matter. */
static void case_schemas(void)
{
    struct sdk_output out;
    check_generated("schemas", "schemas.json", NULL, "{}");
    EXPECT(generate("schemas.json", NULL, &out) == 0);
    const char *d = out.description ? out.description : "";
    EXPECT(
        strstr(d, "def schemas_recursive_tree(tree: {name: str, children?: list[{…}]}) -> Any:"));
    EXPECT(strstr(d, "def schemas_root_recursion(again: {again?: {…}, id?: int} | None = None, id: "
                     "int | None = None)"));
    EXPECT(strstr(d, "user: {login: str, age?: int}, address: {city: str, zip: str} | None = None, "
                     "odd: bool | None = None, dangling: Any = None, remote: Any = None"));
    EXPECT(strstr(d, "def schemas_ref_loop(x: Any = None) -> Any:"));
    EXPECT(strstr(d, "country: Literal[\"c000\", \"c001\", \"c002\", \"c003\", \"c004\", "
                     "\"c005\", \"c006\", \"c007\", …]"));
    EXPECT(strstr(d, "unit: Literal[\"cm\", \"in\"] | None = None"));
    EXPECT(strstr(d,
                  "shape: {kind: Literal[\"circle\"], radius: float} | {kind: Literal[\"rect\"], "
                  "w: float, h: float}"));
    EXPECT(strstr(d, "item: {id: str, extra?: bool} | None = None"));
    EXPECT(strstr(d, "counts: dict[str, int] | None = None, meta: {tag?: str, ...} | None = None, "
                     "odd_key: {\"a b\"?: str, \"2x\"?: int} | None = None"));
    EXPECT(strstr(d, "?: str, …}"));                /* 40 keys: 24 shown */
    EXPECT(strstr(d, "level4: {level5: {…}}}}}}")); /* twelve levels: six shown */
    /* Every type text fits the budget; the huge one is cut, not dropped. */
    size_t i;
    json_t *fn;
    const char *name;
    json_object_foreach(out.functions, name, fn)
    {
        json_array_foreach(json_object_get(fn, "params"), i, fn)
        {
            const char *t = json_string_value(json_object_get(fn, "type"));
            EXPECT(t && strlen(t) <= 480);
        }
    }
    EXPECT(strstr(d, "def schemas_huge_schema(big: {"));
    /* sdk.py quotes the annotations that are not Python expressions. */
    EXPECT(out.source && strstr(out.source, "def schemas_recursive_tree(tree: \"{name: str, "
                                            "children?: list[{…}]}\", *, timeout_ms"));
    EXPECT(out.source && strstr(out.source, "__codemcp_schemas__ = _json.loads(\"{"));
    sdk_output_free(&out);
}

/* The three real servers in one gateway: the listing a client gets (one intro). Its o200k
 * token count is held against the servers' own tools/list JSON by tests/e2e/firsttime.test.mjs. */
static void case_three_servers(void)
{
    const char *files[] = {"everything.json", "memory.json", "filesystem.json"};
    json_t *servers = json_array();
    for (int i = 0; i < 3; i++) {
        json_t *one = load_servers(files[i]);
        EXPECT(one != NULL);
        if (one)
            json_array_extend(servers, one);
        json_decref(one);
    }
    struct sdk_output out;
    EXPECT(sdk_generate(servers, NULL, &out) == 0);
    if (out.description) {
        golden("three_servers.txt", out.description);
        EXPECT(strstr(out.description,
                      "def memory_create_entities(entities: list[{name: str, entityType: str, "
                      "observations: list[str]}]) -> {entities: list[{name: str, entityType: str, "
                      "observations: list[str]}]}:"));
        EXPECT(strstr(out.description, "def filesystem_read_text_file(path: str, tail: float | "
                                       "None = None, head: float | None = None)"));
    }
    sdk_output_free(&out);
    json_decref(servers);
}

/* A learned exemplar that is a plain type (text results are "str") is the return type; the
 * description then has no "# returns:" line for it. */
static void case_learned_returns(void)
{
    struct sdk_output out;
    json_t *shapes =
        json_pack("{s:s,s:s}", "everything_get_sum", "str", "everything_echo", "{text: str}");
    EXPECT(generate("everything.json", shapes, &out) == 0);
    const char *d = out.description ? out.description : "";
    EXPECT(strstr(d, "def everything_get_sum(a: float, b: float) -> str:\n    # Returns the sum "
                     "of two numbers\n"));
    EXPECT(!strstr(d, "# returns: str"));
    EXPECT(strstr(d, "def everything_echo(message: str) -> Any:\n    # Echoes back the input "
                     "string\n    # returns: {text: str}\n"));
    EXPECT(out.source && strstr(out.source, "timeout_ms: int | None = None) -> str:\n"));
    sdk_output_free(&out);
    json_decref(shapes);
}

/* Finds fn in a generation's functions map. */
static json_t *fn_of(const struct sdk_output *out, const char *name)
{
    json_t *f = json_object_get(out->functions, name);
    if (!f)
        fprintf(stderr, "  no function %s\n", name);
    return f;
}

static const char *param_names(json_t *f, struct buf *b)
{
    size_t i;
    json_t *p;
    buf_reset(b);
    json_array_foreach(json_object_get(f, "params"), i, p)
        buf_printf(b, "%s%s", i ? "," : "", json_string_value(json_object_get(p, "name")));
    return b->data ? b->data : "";
}

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Every line after the tools header is a signature or a comment: no upstream text can
 * start a line of its own in the description. */
static void check_description_lines(const char *desc)
{
    const char *p = strstr(desc, "Available tools (signature + summary):\n");
    EXPECT(p != NULL);
    if (!p)
        return;
    p = strchr(p, '\n') + 1;
    while (*p) {
        int ok = strncmp(p, "def ", 4) == 0 || strncmp(p, "    # ", 6) == 0 ||
                 strncmp(p, "(no upstream tools connected)", 29) == 0;
        if (!ok) {
            fprintf(stderr, "  stray description line: %.80s\n", p);
            case_failed = 1;
        }
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
    }
}

static void case_content(void)
{
    const char *files[] = {"everything.json", "memory.json", "filesystem.json", "hostile.json"};
    struct sdk_output out[4];
    struct buf b = {0};
    for (int i = 0; i < 4; i++) {
        EXPECT(generate(files[i], NULL, &out[i]) == 0);
        if (!out[i].source)
            return;
        const char *name;
        json_t *f;
        json_object_foreach(out[i].functions, name, f)
        {
            const char *s = json_string_value(json_object_get(f, "summary"));
            EXPECT(s && utf8_chars(s) <= 160);
            for (const char *c = s; c && *c; c++)
                EXPECT((unsigned char)*c >= 0x20);
        }
        check_description_lines(out[i].description);
    }
    /* No outputSchema and nothing learned: the return type does not pretend to know. */
    EXPECT(strstr(out[0].description, "def everything_get_sum(a: float, b: float) -> "
                                      "Any:\n    # Returns the sum of two numbers\n"));
    EXPECT(strstr(out[0].source, "def everything_get_sum(a: float, b: float, *, timeout_ms: int "
                                 "| None = None) -> Any:\n"));
    EXPECT(strstr(out[0].source, "    return _call(\"everything\", \"get-sum\", _args, "
                                 "timeout_ms)\n"));
    EXPECT(strstr(out[1].description, "def memory_create_entities("));
    EXPECT(strstr(out[1].description, "\n    # [write] "));
    EXPECT(strstr(out[0].description, "Available tools (signature + summary):\n"));
    EXPECT(strstr(out[0].description, "timeout_ms"));

    /* Mutations as the real servers annotate them. */
    EXPECT(json_is_true(json_object_get(fn_of(&out[1], "memory_create_entities"), "mutation")));
    EXPECT(json_is_false(json_object_get(fn_of(&out[1], "memory_read_graph"), "mutation")));
    EXPECT(json_is_false(json_object_get(fn_of(&out[0], "everything_get_sum"), "mutation")));
    EXPECT(json_is_true(json_object_get(fn_of(&out[2], "filesystem_write_file"), "mutation")));

    /* Hostile names, collisions and parameters. */
    struct sdk_output *h = &out[3];
    const char *expected[] = {"hostile_class_",
                              "hostile__2fa",
                              "hostile_a_b_c",
                              "hostile_a_b_c_2",
                              "hostile_a_b_c_3",
                              "hostile_caf_",
                              "hostile___",
                              "hostile_run_query",
                              "hostile_deleteFile",
                              "x_y_z",
                              "x_y_z_2",
                              "class__call",
                              "hostile_drop_table___",
                              "hostile_no_schema_at_all"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        EXPECT(fn_of(h, expected[i]) != NULL);
    EXPECT_STR(json_string_value(json_object_get(fn_of(h, "hostile_a_b_c_2"), "tool")), "a_b_c_2");
    EXPECT_STR(json_string_value(json_object_get(fn_of(h, "hostile_a_b_c"), "tool")), "a-b.c");
    EXPECT_STR(json_string_value(json_object_get(fn_of(h, "hostile_a_b_c_3"), "tool")), "a.b-c");
    EXPECT_STR(json_string_value(json_object_get(fn_of(h, "x_y_z"), "server")), "x");
    EXPECT_STR(json_string_value(json_object_get(fn_of(h, "x_y_z_2"), "server")), "x_y");
    json_t *cls = fn_of(h, "hostile_class_");
    EXPECT_STR(param_names(cls, &b), "from_,lambda_,missing_but_required,a_b,a_b_2,timeout_ms,"
                                     "_args_2,_call_2,__debug___,match_,type_,__");
    EXPECT_STR(json_string_value(json_object_get(cls, "timeout_param")), "_timeout_ms");
    EXPECT(strstr(h->description, "__: str | None = None, *, _timeout_ms: int | None = None) "
                                  "-> Any:\n"));
    EXPECT(json_is_false(json_object_get(cls, "extra")));
    EXPECT(json_is_false(json_object_get(cls, "mutation"))); /* readOnlyHint */
    EXPECT(strstr(h->source, "    _args: dict[str, Any] = {\"from\": from_, \"lambda\": "
                             "lambda_, \"missing_but_required\": missing_but_required}\n"));
    json_t *rq = fn_of(h, "hostile_run_query");
    EXPECT(json_is_true(json_object_get(rq, "extra")));
    EXPECT_STR(param_names(rq, &b), "sql,extra");
    EXPECT(strstr(h->description, "def hostile_run_query(sql: str, extra: str | None = None, "
                                  "**_extra: Any) -> Any:\n"));
    EXPECT(json_is_true(json_object_get(fn_of(h, "hostile_open_schema_extra"), "extra")));
    EXPECT(json_is_false(json_object_get(fn_of(h, "hostile_closed_schema"), "extra")));
    EXPECT(json_is_true(json_object_get(fn_of(h, "hostile_get_things"), "mutation"))); /* config */
    EXPECT(json_is_true(json_object_get(fn_of(h, "hostile_deleteFile"), "mutation")));
    EXPECT(json_is_false(json_object_get(fn_of(h, "hostile_author_list"), "mutation")));
    /* enabled:false leaves no trace anywhere. */
    EXPECT(!strstr(h->source, "secret_tool") && !strstr(h->description, "secret_tool"));
    char *fns = json_dumps(h->functions, 0);
    EXPECT(!strstr(fns, "secret_tool"));
    free(fns);
    /* Types. */
    EXPECT(strstr(h->source, "mode: Literal[\"it's\", \"say \\\"hi\\\"\", \"back\\\\slash\", "
                             "\"new\\nline\", \"tab\\there\", \"nul\\x00byte\", "
                             "\"\\\"\\\"\\\"\", \"é\\u2028\"]"));
    EXPECT(strstr(h->source, "level: Literal[1, 2, 3] | None = None"));
    EXPECT(strstr(h->source, "flag: Literal[True] | None = None"));
    EXPECT(strstr(h->source, "ratio: float | None = None"));
    EXPECT(strstr(h->source, "nested: str | int | list[str | float] | bool | None = None"));
    EXPECT(strstr(h->source, "maybe: str | None = None"));
    EXPECT(strstr(h->source, "ref: Any = None"));
    EXPECT(strstr(h->source, "grid: list[list[int]] | None = None"));
    EXPECT(strstr(h->source, "nothing: None = None"));
    /* Summaries: first sentence; long lines cut with an ellipsis. */
    EXPECT_STR(json_string_value(json_object_get(rq, "summary")), "Runs a query.");
    const char *name;
    json_t *f;
    int cut = 0;
    json_object_foreach(h->functions, name, f)
    {
        if (strlen(name) > 128) {
            const char *s = json_string_value(json_object_get(f, "summary"));
            cut = utf8_chars(s) <= 160 && strstr(s, "\xE2\x80\xA6") != NULL;
        }
    }
    EXPECT(cut);
    for (int i = 0; i < 4; i++)
        sdk_output_free(&out[i]);
    buf_free(&b);
}

static void case_shapes(void)
{
    struct sdk_output out;
    json_t *shapes = json_pack("{s:s}", "memory_read_graph", "{entities: list, relations: list}");
    EXPECT(generate("memory.json", shapes, &out) == 0);
    EXPECT(out.description && strstr(out.description, "    # Read the entire knowledge graph\n"
                                                      "    # returns: {entities: list, relations: "
                                                      "list}\n"));
    sdk_output_free(&out);
    json_decref(shapes);
}

static void case_mutation(void)
{
    json_t *ro = json_pack("{s:b}", "readOnlyHint", 1);
    json_t *ro_false = json_pack("{s:b}", "readOnlyHint", 0);
    json_t *destructive = json_pack("{s:b}", "destructiveHint", 1);
    json_t *cfg_read = json_pack("{s:b}", "mutation", 0);
    json_t *cfg_write = json_pack("{s:b,s:b}", "enabled", 1, "mutation", 1);
    EXPECT(sdk_tool_is_write("create_entities", NULL, NULL) == 1);
    EXPECT(sdk_tool_is_write("read_graph", NULL, NULL) == 0);
    EXPECT(sdk_tool_is_write("get-sum", NULL, NULL) == 0);
    EXPECT(sdk_tool_is_write("deleteFile", NULL, NULL) == 1);
    EXPECT(sdk_tool_is_write("author_list", NULL, NULL) == 0);
    EXPECT(sdk_tool_is_write("delete_everything", ro, NULL) == 0);       /* readOnlyHint */
    EXPECT(sdk_tool_is_write("create_thing", ro_false, NULL) == 1);      /* false decides nothing */
    EXPECT(sdk_tool_is_write("get_status", destructive, NULL) == 1);     /* destructiveHint */
    EXPECT(sdk_tool_is_write("delete_all", destructive, cfg_read) == 0); /* config wins */
    EXPECT(sdk_tool_is_write("get_things", ro, cfg_write) == 1);         /* config wins */
    EXPECT(sdk_tool_is_write("graph_delete_node", NULL, NULL) == 1);     /* strong verb anywhere */
    EXPECT(sdk_tool_is_write("HTTPServerRestart", NULL, NULL) == 1);
    EXPECT(sdk_tool_is_write("list_and_delete", NULL, NULL) == 0); /* first word read */
    EXPECT(sdk_tool_is_write("searchFiles", NULL, NULL) == 0);
    EXPECT(sdk_tool_is_write("user.create", NULL, NULL) == 1);
    EXPECT(sdk_tool_is_write("send message", NULL, NULL) == 1);
    EXPECT(sdk_tool_is_write("simulate-research-query", NULL, NULL) == 0);
    EXPECT(sdk_tool_is_write("", NULL, NULL) == 0);
    EXPECT(sdk_tool_is_write(NULL, NULL, NULL) == 0);
    json_decref(ro);
    json_decref(ro_false);
    json_decref(destructive);
    json_decref(cfg_read);
    json_decref(cfg_write);
}

static void case_identifier(void)
{
    const char *cases[][2] = {
        {"class", "class_"},
        {"2fa", "_2fa"},
        {"a.b-c", "a_b_c"},
        {"caf\xC3\xA9", "caf_"},
        {"\xE6\x97\xA5\xE6\x9C\xAC", "__"},
        {"", "__"},
        {"_", "__"},
        {"match", "match_"},
        {"type", "type_"},
        {"case", "case_"},
        {"None", "None_"},
        {"ok_name", "ok_name"},
        {"__debug__", "__debug___"},
        {"from", "from_"},
        {"a b", "a_b"},
        {"a\xFF", "a_"},
        {"Type", "Type"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = sdk_identifier(cases[i][0]);
        EXPECT_STR(got, cases[i][1]);
        free(got);
    }
    char *got = sdk_identifier(NULL);
    EXPECT_STR(got, "__");
    free(got);
}

/* The order tools arrive in must not change the module. */
static void case_deterministic(void)
{
    struct sdk_output a, b;
    json_t *servers = load_servers("memory.json");
    EXPECT(servers && sdk_generate(servers, NULL, &a) == 0);
    json_t *tools = json_object_get(json_array_get(servers, 0), "tools");
    json_t *rev = json_array();
    for (size_t i = json_array_size(tools); i > 0; i--)
        json_array_append(rev, json_array_get(tools, i - 1));
    json_object_set_new(json_array_get(servers, 0), "tools", rev);
    EXPECT(sdk_generate(servers, NULL, &b) == 0);
    EXPECT(a.source && b.source && strcmp(a.source, b.source) == 0);
    EXPECT(a.description && b.description && strcmp(a.description, b.description) == 0);
    EXPECT(json_equal(a.functions, b.functions));
    sdk_output_free(&a);
    sdk_output_free(&b);
    json_decref(servers);
}

static void case_malformed_and_empty(void)
{
    struct sdk_output out;
    json_t *obj = json_object();
    EXPECT(sdk_generate(obj, NULL, &out) == -1);
    EXPECT(out.source == NULL && out.description == NULL && out.functions == NULL);
    json_t *bad = json_pack("[{s:[{s:s}]},{s:i}]", "tools", "name", "t", "server", 3);
    EXPECT(sdk_generate(bad, NULL, &out) == -1);
    json_t *empty = json_pack("[{s:s}]", "server", "idle");
    EXPECT(sdk_generate(empty, obj, &out) == 0);
    EXPECT(out.description && strstr(out.description, "(no upstream tools connected)"));
    EXPECT(json_object_size(out.functions) == 0);
    EXPECT(python_check(&out, "{}") == 0);
    sdk_output_free(&out);
    sdk_output_free(&out); /* safe twice */
    json_decref(obj);
    json_decref(bad);
    json_decref(empty);
}

int main(void)
{
    const char *dir = getenv("CODEMCP_TEST_DATA");
    snprintf(data_dir, sizeof data_dir, "%s", dir && *dir ? dir : "../data");
    check_case("identifier sanitizing", case_identifier);
    check_case("mutation classification", case_mutation);
    check_case("golden + python: everything", case_everything);
    check_case("golden + python: memory", case_memory);
    check_case("golden + python: filesystem", case_filesystem);
    check_case("golden + python: hostile", case_hostile);
    check_case("golden + python: hostile schemas", case_schemas);
    check_case("three servers in one listing", case_three_servers);
    check_case("learned plain types are return types", case_learned_returns);
    check_case("content assertions", case_content);
    check_case("shapes add a returns line", case_shapes);
    check_case("input order does not matter", case_deterministic);
    check_case("malformed and empty input", case_malformed_and_empty);
    return CHECK_DONE();
}
