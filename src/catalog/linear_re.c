/* linear_re — see linear_re.h: the parser of the shared pattern syntax, and the Thompson NFA
 * that matches a whole value as a set of states (no backtracking), so a value written by a
 * hostile program costs O(value length * pattern size) whatever the pattern. POSIX regexec
 * and fnmatch backtrack (exponential on patterns like (a*)*b), and the values they would see
 * are the model's. `.` matches any byte, newline included. Globs are compiled into the same
 * machine: `*` any bytes, `?` one byte, `\` quotes the next character. */
#include "linear_re.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RE_MAX_PROG   20000 /* instructions: bounds the per-byte work of one value */
#define RE_MAX_REPEAT 100
#define RE_MAX_DEPTH  64 /* nested groups */

enum op { OP_BYTES, OP_SPLIT, OP_JMP, OP_MATCH };

struct inst {
    unsigned char op;
    int x, y;              /* SPLIT: both; JMP: x */
    unsigned char set[32]; /* BYTES: the bytes accepted */
};

struct pre {
    struct inst *prog;
    int n;
};

/* ---- parse to a tree --------------------------------------------------------------------- */

struct parser {
    const char *p, *end;
    int icase, depth;
    char *err;
    size_t errlen;
};

static struct re_node *node_new(enum re_kind k, struct re_node *a, struct re_node *b)
{
    struct re_node *n = xcalloc(1, sizeof(*n));
    n->kind = k;
    n->a = a;
    n->b = b;
    return n;
}

void re_free(struct re_node *n)
{
    if (!n)
        return;
    re_free(n->a);
    re_free(n->b);
    free(n);
}

static void set_add(unsigned char *set, int c, int icase)
{
    set[c >> 3] |= 1u << (c & 7);
    if (icase && c >= 'a' && c <= 'z')
        set_add(set, c - 32, 0);
    else if (icase && c >= 'A' && c <= 'Z')
        set_add(set, c + 32, 0);
}

static int fail(struct parser *ps, const char *msg)
{
    if (!*ps->err)
        snprintf(ps->err, ps->errlen, "%s", msg);
    return -1;
}

/* The class of an escape letter (\d \w \s and their negations) into set: 1, else 0. */
static int escape_class(int c, unsigned char *set)
{
    int neg = c == 'D' || c == 'W' || c == 'S';
    int lc = neg ? c + 32 : c;
    if (lc != 'd' && lc != 'w' && lc != 's')
        return 0;
    unsigned char tmp[32] = {0};
    for (int b = 0; b < 256; b++) {
        int in = lc == 'd'   ? (b >= '0' && b <= '9')
                 : lc == 'w' ? ((b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') ||
                                (b >= 'A' && b <= 'Z') || b == '_')
                             : (b == ' ' || (b >= '\t' && b <= '\r'));
        if (in)
            set_add(tmp, b, 0);
    }
    for (int i = 0; i < 32; i++)
        set[i] |= neg ? (unsigned char)~tmp[i] : tmp[i];
    return 1;
}

/* An escaped byte after `\`: the literal, or -1 for a letter with no meaning (reserved). */
static int escape_literal(int c)
{
    if (c == 'n')
        return '\n';
    if (c == 't')
        return '\t';
    if (c == 'r')
        return '\r';
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return -1;
    return c;
}

static int parse_class(struct parser *ps, unsigned char *set)
{
    int neg = ps->p < ps->end && *ps->p == '^';
    ps->p += neg;
    unsigned char tmp[32] = {0};
    int first = 1;
    while (ps->p < ps->end && (*ps->p != ']' || first)) {
        first = 0;
        int c = (unsigned char)*ps->p++;
        if (c == '\\') {
            if (ps->p >= ps->end)
                return fail(ps, "a class ends in \\");
            int e = (unsigned char)*ps->p++;
            if (escape_class(e, tmp))
                continue;
            if ((c = escape_literal(e)) < 0)
                return fail(ps, "unknown escape in a class");
        }
        int hi = c;
        if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
            hi = (unsigned char)ps->p[1];
            ps->p += 2;
            if (hi < c)
                return fail(ps, "a class range runs backwards");
        }
        for (int b = c; b <= hi; b++)
            set_add(tmp, b, ps->icase);
    }
    if (ps->p >= ps->end)
        return fail(ps, "a class [ is not closed");
    ps->p++;
    for (int i = 0; i < 32; i++)
        set[i] = neg ? (unsigned char)~tmp[i] : tmp[i];
    return 0;
}

static struct re_node *parse_alt(struct parser *ps);

static struct re_node *parse_atom(struct parser *ps)
{
    int c = (unsigned char)*ps->p++;
    struct re_node *n = node_new(RE_SET, NULL, NULL);
    if (c == '(') {
        free(n);
        if (++ps->depth > RE_MAX_DEPTH)
            return fail(ps, "groups nest too deep"), NULL;
        int capture = 1;
        if (ps->end - ps->p >= 2 && ps->p[0] == '?' && ps->p[1] == ':') {
            ps->p += 2;
            capture = 0;
        } else if (ps->p < ps->end && *ps->p == '?')
            return fail(ps, "only (?: ) groups are supported"), NULL;
        n = parse_alt(ps);
        ps->depth--;
        if (!n)
            return NULL;
        if (ps->p >= ps->end || *ps->p != ')') {
            re_free(n);
            return fail(ps, "a group ( is not closed"), NULL;
        }
        ps->p++;
        return capture ? node_new(RE_GROUP, n, NULL) : n;
    }
    if (c == '.')
        memset(n->set, 0xff, sizeof(n->set));
    else if (c == '[') {
        if (parse_class(ps, n->set) < 0)
            goto bad;
    } else if (c == '\\') {
        if (ps->p >= ps->end) {
            fail(ps, "the pattern ends in \\");
            goto bad;
        }
        int e = (unsigned char)*ps->p++;
        if (!escape_class(e, n->set)) {
            if ((c = escape_literal(e)) < 0) {
                fail(ps, "unknown escape (\\b, backreferences and the like are not supported)");
                goto bad;
            }
            set_add(n->set, c, ps->icase);
        }
    } else if (c == '*' || c == '+' || c == '?' || c == '{' || c == ')' || c == '^' || c == '$') {
        fail(ps, c == '^' || c == '$'
                     ? "^ and $ are not needed: a pattern always matches the whole value"
                     : "a quantifier or ) with nothing before it");
        goto bad;
    } else
        set_add(n->set, c, ps->icase);
    return n;
bad:
    free(n);
    return NULL;
}

static int parse_count(struct parser *ps)
{
    int v = -1;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9' && v <= RE_MAX_REPEAT)
        v = (v < 0 ? 0 : v * 10) + (*ps->p++ - '0');
    return v;
}

static struct re_node *parse_repeat(struct parser *ps)
{
    struct re_node *n = parse_atom(ps);
    while (n && ps->p < ps->end && strchr("*+?{", *ps->p)) {
        int c = *ps->p++, min = 0, max = -1;
        if (c == '+')
            min = 1;
        else if (c == '?')
            max = 1;
        else if (c == '{') {
            min = max = parse_count(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                max = ps->p < ps->end && *ps->p == '}' ? -1 : parse_count(ps);
                if (max == -1 && (ps->p >= ps->end || *ps->p != '}'))
                    max = -2;
            }
            if (min < 0 || max == -2 || ps->p >= ps->end || *ps->p != '}' || min > RE_MAX_REPEAT ||
                max > RE_MAX_REPEAT || (max >= 0 && max < min)) {
                re_free(n);
                return fail(ps, "a {m,n} repeat needs 0 <= m <= n <= 100"), NULL;
            }
            ps->p++;
        }
        struct re_node *r = node_new(RE_REPEAT, n, NULL);
        r->min = min;
        r->max = max;
        n = r;
    }
    return n;
}

static struct re_node *parse_cat(struct parser *ps)
{
    struct re_node *n = node_new(RE_EMPTY, NULL, NULL);
    while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
        struct re_node *a = parse_repeat(ps);
        if (!a) {
            re_free(n);
            return NULL;
        }
        n = node_new(RE_CAT, n, a);
    }
    return n;
}

static struct re_node *parse_alt(struct parser *ps)
{
    struct re_node *n = parse_cat(ps);
    while (n && ps->p < ps->end && *ps->p == '|') {
        ps->p++;
        struct re_node *b = parse_cat(ps);
        if (!b) {
            re_free(n);
            return NULL;
        }
        n = node_new(RE_ALT, n, b);
    }
    return n;
}

/* ---- emit the program -------------------------------------------------------------------- */

static int emit(struct pre *re, int op)
{
    if (re->n >= RE_MAX_PROG)
        return -1;
    re->prog = xrealloc(re->prog, (size_t)(re->n + 1) * sizeof(*re->prog));
    memset(&re->prog[re->n], 0, sizeof(*re->prog));
    re->prog[re->n].op = (unsigned char)op;
    return re->n++;
}

static int gen(struct pre *re, const struct re_node *n)
{
    int at;
    switch (n->kind) {
    case RE_EMPTY:
        return 0;
    case RE_SET:
        if ((at = emit(re, OP_BYTES)) < 0)
            return -1;
        memcpy(re->prog[at].set, n->set, sizeof(n->set));
        return 0;
    case RE_GROUP:
        return gen(re, n->a);
    case RE_CAT:
        return gen(re, n->a) < 0 ? -1 : gen(re, n->b);
    case RE_ALT: {
        int split = emit(re, OP_SPLIT);
        if (split < 0 || gen(re, n->a) < 0)
            return -1;
        int jmp = emit(re, OP_JMP);
        if (jmp < 0)
            return -1;
        re->prog[split].x = split + 1;
        re->prog[split].y = re->n;
        if (gen(re, n->b) < 0)
            return -1;
        re->prog[jmp].x = re->n;
        return 0;
    }
    case RE_REPEAT:
        for (int i = 0; i < n->min; i++)
            if (gen(re, n->a) < 0)
                return -1;
        if (n->max < 0) { /* L: split body, out; body; jmp L */
            int split = emit(re, OP_SPLIT);
            if (split < 0 || gen(re, n->a) < 0 || (at = emit(re, OP_JMP)) < 0)
                return -1;
            re->prog[at].x = split;
            re->prog[split].x = split + 1;
            re->prog[split].y = re->n;
            return 0;
        }
        for (int i = n->min; i < n->max; i++) { /* optional copies, each skipping the rest */
            int split = emit(re, OP_SPLIT);
            if (split < 0 || gen(re, n->a) < 0)
                return -1;
            re->prog[split].x = split + 1;
            re->prog[split].y = -1 - split; /* patched to the end below */
        }
        for (int i = 0; i < re->n; i++)
            if (re->prog[i].op == OP_SPLIT && re->prog[i].y < 0)
                re->prog[i].y = re->n;
        return 0;
    }
    return -1;
}

struct re_node *re_parse(const char *pattern, size_t len, int icase, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    *err = 0;
    struct parser ps = {pattern, pattern + len, icase, 0, err, errlen};
    struct re_node *tree = parse_alt(&ps);
    if (tree && ps.p < ps.end) {
        fail(&ps, "an unmatched )");
        re_free(tree);
        tree = NULL;
    }
    if (!tree && !*err)
        snprintf(err, errlen, "invalid pattern");
    return tree;
}

struct pre *pre_compile(const char *pattern, size_t len, int icase, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    struct re_node *tree = re_parse(pattern, len, icase, err, errlen);
    if (!tree)
        return NULL;
    struct pre *re = xcalloc(1, sizeof(*re));
    if (gen(re, tree) < 0 || emit(re, OP_MATCH) < 0) {
        snprintf(err, errlen, "the pattern is too big (more than %d states once repeats expand)",
                 RE_MAX_PROG);
        re_free(tree);
        pre_free(re);
        return NULL;
    }
    re_free(tree);
    return re;
}

struct pre *pre_glob(const char *glob, size_t len, char *err, size_t errlen)
{
    struct buf b = {0};
    buf_appends(&b, "");
    for (size_t i = 0; i < len; i++) {
        char c = glob[i];
        if (c == '*')
            buf_appends(&b, ".*");
        else if (c == '?')
            buf_appends(&b, ".");
        else {
            if (c == '\\' && i + 1 < len)
                c = glob[++i];
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                (c & 0x80))
                buf_append(&b, &c, 1);
            else if (c == '\n' || c == '\t' || c == '\r')
                buf_printf(&b, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
            else {
                char esc[2] = {'\\', c};
                buf_append(&b, esc, 2);
            }
        }
    }
    struct pre *re = pre_compile(b.data, b.len, 0, err, errlen);
    buf_free(&b);
    return re;
}

void pre_free(struct pre *re)
{
    if (!re)
        return;
    free(re->prog);
    free(re);
}

/* ---- run it ------------------------------------------------------------------------------ */

struct set {
    int *pc;
    int n;
};

/* Adds pc and everything reachable from it without reading a byte (explicit stack: no
 * recursion depth from the pattern). mark[pc] == gen: already in this step's set. */
static void add(const struct pre *re, struct set *s, int pc, unsigned *mark, unsigned gen,
                int *stack)
{
    int top = 0;
    stack[top++] = pc;
    while (top) {
        pc = stack[--top];
        if (mark[pc] == gen)
            continue;
        mark[pc] = gen;
        const struct inst *in = &re->prog[pc];
        if (in->op == OP_JMP)
            stack[top++] = in->x;
        else if (in->op == OP_SPLIT) {
            stack[top++] = in->y;
            stack[top++] = in->x;
        } else
            s->pc[s->n++] = pc;
    }
}

int pre_match(const struct pre *re, const char *s, size_t len)
{
    size_t n = (size_t)re->n;
    /* cur and next: n each; the stack: 2n + 1 (a state is expanded once per step, a SPLIT
     * pushes two); the marks: n */
    int small[5 * 256 + 1]; /* globs and most patterns: no allocation per value */
    int *mem = n <= 256 ? small : xmalloc((n * 5 + 1) * sizeof(int));
    struct set cur = {mem, 0}, next = {mem + n, 0};
    int *stack = mem + 2 * n;
    unsigned *mark = (unsigned *)(mem + 4 * n + 1);
    memset(mark, 0, n * sizeof(unsigned));
    unsigned gen = 1;
    add(re, &cur, 0, mark, gen, stack);
    for (size_t i = 0; i < len && cur.n; i++) {
        unsigned char c = (unsigned char)s[i];
        next.n = 0;
        gen++;
        for (int k = 0; k < cur.n; k++) {
            const struct inst *in = &re->prog[cur.pc[k]];
            if (in->op == OP_BYTES && (in->set[c >> 3] & (1u << (c & 7))))
                add(re, &next, cur.pc[k] + 1, mark, gen, stack);
        }
        struct set t = cur;
        cur = next;
        next = t;
    }
    int matched = 0;
    for (int k = 0; k < cur.n; k++)
        matched |= re->prog[cur.pc[k]].op == OP_MATCH;
    if (mem != small)
        free(mem);
    return matched;
}
