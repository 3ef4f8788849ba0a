/* linear_re — regular expressions over bytes that never backtrack, for the patterns whose
 * values a hostile program writes: policy rules' globs and regexes (policy_rules.c) and the
 * redaction rules (redact.c) share this one parser, so a pattern means the same to both.
 *
 * Syntax (a small, byte-oriented subset that means the same in Python's re): literals, `.`,
 * classes `[a-z_]` `[^;]`, escapes `\d \w \s \D \W \S`, `\n \t \r` and `\` before any
 * punctuation, groups `( )` (capturing) and `(?: )`, alternation `|`, quantifiers `* + ?` and
 * `{m}` `{m,}` `{m,n}` (n <= 100); no anchors. Case can be folded (ASCII) at compile time.
 *
 * Two ways to run a parsed pattern: pre_compile turns it into a Thompson NFA matched against
 * a WHOLE value in O(value length * pattern size), whatever the pattern (policy rules);
 * redact.c walks the tree itself into its flat matcher, which searches free text (the NFA
 * costs ~10x as much per log line there: bench/results/redact_engines.md). */
#ifndef CODEMCP_LINEAR_RE_H
#define CODEMCP_LINEAR_RE_H

#include <stddef.h>

enum re_kind { RE_SET, RE_CAT, RE_ALT, RE_REPEAT, RE_GROUP, RE_EMPTY };

/* SET: one byte of set. CAT: a then b. ALT: a or b. REPEAT: a, min..max times (max -1:
 * unbounded). GROUP: a, captured. EMPTY: nothing. */
struct re_node {
    enum re_kind kind;
    unsigned char set[32]; /* bit per byte value */
    struct re_node *a, *b;
    int min, max;
};

/* The tree of pattern[0..len), or NULL with err filled when it is not in the subset. */
struct re_node *re_parse(const char *pattern, size_t len, int icase, char *err, size_t errlen);
void re_free(struct re_node *n);

struct pre;
/* NULL with err filled when the pattern is not in the subset or too big. */
struct pre *pre_compile(const char *pattern, size_t len, int icase, char *err, size_t errlen);
/* A glob (`*`, `?`, `\` quotes) as a pattern. */
struct pre *pre_glob(const char *glob, size_t len, char *err, size_t errlen);
/* 1 when the whole of s[0..len) matches. O(len * pattern size). */
int pre_match(const struct pre *re, const char *s, size_t len);
void pre_free(struct pre *re);

#endif
