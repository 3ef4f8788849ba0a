/* Redaction's cost is bounded whatever a worker sends (docs/review-extensions.md):
 * the gateway redacts a refused call's arguments and every log line on its event loop, and
 * its rules are matched in linear time. One long string is redacted only where it is shown; a
 * dump (cut to max_len anyway) reads a few times max_len of strings, not all of them. Timing
 * bounds are generous (each case took from a minute to hours before). */
#include "redact.h"

#include "check.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static json_t *long_string(size_t n, char c)
{
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    json_t *v = json_string(s);
    free(s);
    return v;
}

static void test_one_long_string(void)
{
    json_t *args = json_object();
    json_object_set_new(args, "message", long_string(1u << 20, 'x'));
    double t = now_s();
    char *d = redact_dump(args, 300);
    EXPECT(now_s() - t < 5.0);
    EXPECT(d && strstr(d, "chars)") && strlen(d) < 400);
    free(d);
    json_t *r = redact_json(args, 200); /* the cut counts every byte */
    EXPECT(strstr(json_string_value(json_object_get(r, "message")), "(+1048376 chars)"));
    json_decref(r);
    json_decref(args);
}

static void test_many_strings(void)
{
    json_t *args = json_object(), *list = json_array();
    for (int i = 0; i < 50000; i++)
        json_array_append_new(list, long_string(700, 'y'));
    json_object_set_new(args, "items", list);
    json_object_set_new(args, "api_key", json_string("sk-live-secret-value"));
    double t = now_s();
    char *d = redact_dump(args, 300);
    EXPECT(now_s() - t < 5.0);
    EXPECT(d && strlen(d) < 400 && !strstr(d, "secret-value"));
    free(d);
    json_decref(args);
}

static void test_secret_across_the_cut(void)
{
    char buf[1200];
    memset(buf, 'z', 190);
    strcpy(buf + 190, " token=abcdefghijklmnopqrstuvwxyz0123456789 and more");
    json_t *args = json_pack("{s:s}", "m", buf);
    json_t *r = redact_json(args, 200);
    EXPECT(!strstr(json_string_value(json_object_get(r, "m")), "abcdefgh"));
    json_decref(r);
    json_decref(args);
}

/* n bytes of unit repeated (caller frees). */
static char *repeated(const char *unit, size_t n)
{
    size_t u = strlen(unit);
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        s[i] = unit[i % u];
    s[n] = '\0';
    return s;
}

/* Free text is redacted whole (log lines, error messages): every rule in linear time, on the
 * inputs that made a backtracking matcher quadratic ("a:a:a:" kept the key=value rule
 * re-reading the rest of the text from each colon; runs of identifier characters each rule). */
static void test_free_text_linear(void)
{
    static const char *const units[] = {"a:",          "x",     "eyJ",  "sk-",
                                        "-----BEGIN ", "://a:", "a=b ", "Bearer "};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        char *text = repeated(units[i], 1u << 20);
        double t = now_s();
        char *r = redact_text(text, strlen(text));
        EXPECT(now_s() - t < 5.0);
        EXPECT(r != NULL);
        free(r);
        free(text);
    }
    char *tail = repeated("a:", 1u << 20);
    memcpy(tail + (1u << 20) - 20, " token=s3cr3tvalue9", 19);
    char *r = redact_text(tail, strlen(tail));
    EXPECT(strstr(r, "token=***") && !strstr(r, "s3cr3tvalue9"));
    free(r);
    free(tail);
}

int main(void)
{
    check_case("one 1 MB string: redacted where shown, counted in full", test_one_long_string);
    check_case("50k strings of 700 bytes: a dump reads only what it can show", test_many_strings);
    check_case("a secret across the shown part's end is still redacted",
               test_secret_across_the_cut);
    check_case("1 MB of free text in every hostile pattern: linear time", test_free_text_linear);
    return CHECK_DONE();
}
