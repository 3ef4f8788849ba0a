/* names — Python identifiers and Python string literals for sdkgen.
 *
 * Owns the sanitizer every other part of codemcp must reuse (through sdk_identifier or the
 * `functions` map), the UTF-8 walker, and the one string-literal emitter through which every
 * upstream-controlled string reaches the generated source. Pure: no I/O. */
#include "sdkgen.h"
#include "sdkgen_int.h"

#include <string.h>

/* Hard keywords of Python 3.11, the soft keywords (match, case, _, type — legal names today,
 * but a name that reads like syntax confuses both people and models), and __debug__, which
 * the compiler refuses as a parameter or assignment target. */
static const char *const sdk_keywords[] = {
    "False",   "None",     "True",     "and",    "as",   "assert", "async",  "await",
    "break",   "class",    "continue", "def",    "del",  "elif",   "else",   "except",
    "finally", "for",      "from",     "global", "if",   "import", "in",     "is",
    "lambda",  "nonlocal", "not",      "or",     "pass", "raise",  "return", "try",
    "while",   "with",     "yield",    "match",  "case", "_",      "type",   "__debug__",
};

static int sdk_is_keyword(const char *s)
{
    for (size_t i = 0; i < sizeof sdk_keywords / sizeof sdk_keywords[0]; i++)
        if (strcmp(s, sdk_keywords[i]) == 0)
            return 1;
    return 0;
}

uint32_t sdk__utf8_next(const char *s, size_t n, size_t *i)
{
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = n - *i;
    uint32_t cp;
    size_t len;
    if (p[0] < 0x80) {
        *i += 1;
        return p[0];
    } else if ((p[0] & 0xE0) == 0xC0) {
        cp = p[0] & 0x1F;
        len = 2;
    } else if ((p[0] & 0xF0) == 0xE0) {
        cp = p[0] & 0x0F;
        len = 3;
    } else if ((p[0] & 0xF8) == 0xF0) {
        cp = p[0] & 0x07;
        len = 4;
    } else {
        goto invalid;
    }
    if (left < len)
        goto invalid;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80)
            goto invalid;
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        goto invalid;
    *i += len;
    return cp;
invalid:
    *i += 1;
    return 0xFFFD;
}

void sdk__utf8_put(struct buf *b, uint32_t cp)
{
    char out[4];
    size_t len;
    if (cp < 0x80) {
        out[0] = (char)cp;
        len = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        len = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        len = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        len = 4;
    }
    buf_append(b, out, len);
}

static int sdk_is_ident_char(uint32_t cp)
{
    return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') ||
           cp == '_';
}

char *sdk__identifier_n(const char *s, size_t n)
{
    struct buf b = {0};
    size_t i = 0;
    /* ASCII only: Python accepts many Unicode letters in names, but NFKC normalisation would
     * make two different upstream names one Python name behind our back. */
    while (i < n) {
        uint32_t cp = sdk__utf8_next(s, n, &i);
        if (b.len == 0 && cp >= '0' && cp <= '9')
            buf_appends(&b, "_");
        char c = sdk_is_ident_char(cp) ? (char)cp : '_';
        buf_append(&b, &c, 1);
    }
    if (b.len == 0)
        buf_appends(&b, "_");
    if (sdk_is_keyword(b.data))
        buf_appends(&b, "_");
    return buf_steal(&b);
}

char *sdk_identifier(const char *s)
{
    return sdk__identifier_n(s ? s : "", s ? strlen(s) : 0);
}

void sdk__py_str(struct buf *b, const char *s, size_t n)
{
    size_t i = 0;
    buf_appends(b, "\"");
    while (i < n) {
        uint32_t cp = sdk__utf8_next(s, n, &i);
        switch (cp) {
        case '\\':
            buf_appends(b, "\\\\");
            break;
        case '"':
            buf_appends(b, "\\\"");
            break;
        case '\n':
            buf_appends(b, "\\n");
            break;
        case '\r':
            buf_appends(b, "\\r");
            break;
        case '\t':
            buf_appends(b, "\\t");
            break;
        default:
            /* C0, DEL and C1 controls as \x escapes (in a str literal \x85 is U+0085, so the
             * value round-trips); the Unicode line separators escaped so no editor or
             * line-splitting tool ever breaks the literal. Everything else stays UTF-8. */
            if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
                buf_printf(b, "\\x%02x", (unsigned)cp);
            else if (cp == 0x2028 || cp == 0x2029)
                buf_printf(b, "\\u%04x", (unsigned)cp);
            else
                sdk__utf8_put(b, cp);
        }
    }
    buf_appends(b, "\"");
}
