/* jsonc — see jsonc.h. One pass for comments, one for trailing commas; O(len). */
#include "jsonc.h"

static void blank(char *p, char *end)
{
    for (; p < end; p++)
        if (*p != '\n')
            *p = ' ';
}

void jsonc_strip(char *text, size_t len)
{
    char *p = text, *end = text + len;
    while (p < end) {
        if (*p == '"') { /* skip the string, honouring escapes */
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\' && p + 1 < end)
                    p++;
            p++;
        } else if (*p == '/' && p + 1 < end && p[1] == '/') {
            char *q = p;
            while (q < end && *q != '\n')
                q++;
            blank(p, q);
            p = q;
        } else if (*p == '/' && p + 1 < end && p[1] == '*') {
            char *q = p + 2;
            while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
                q++;
            q = q + 1 < end ? q + 2 : end; /* an unterminated comment runs to the end */
            blank(p, q);
            p = q;
        } else {
            p++;
        }
    }
    /* Comments are spaces now: a comma followed only by whitespace and then a closer goes. */
    for (p = text; p < end; p++) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\' && p + 1 < end)
                    p++;
        } else if (*p == ',') {
            char *q = p + 1;
            while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
                q++;
            if (q < end && (*q == '}' || *q == ']'))
                *p = ' ';
        }
    }
}

json_t *jsonc_parse(char *text, size_t len, size_t flags, json_error_t *err)
{
    jsonc_strip(text, len);
    return json_loadb(text, len, flags, err);
}
