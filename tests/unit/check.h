/* check.h — the tiny assertion kit of codemcp's C unit tests.
 *
 * CHECK(cond, fmt, ...) counts a case, prints "ok   <what>" or "FAIL file:line: <what>",
 * and CHECK_DONE() prints the "N passed, N failed" line and yields main's exit status. */
#ifndef CODEMCP_TEST_CHECK_H
#define CODEMCP_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>

/* xorshift64: the tests' repeatable random numbers (each test keeps and seeds its own state). */
__attribute__((unused)) static uint64_t check_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int check_failures, check_cases;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        check_cases++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
        } else {                                                                                   \
            printf("ok   ");                                                                       \
        }                                                                                          \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
    } while (0)

/* Case style: a test function marks itself failed through EXPECT (and helpers that set
 * case_failed); check_case runs it and reports it as one CHECK line. */
static int case_failed __attribute__((unused));

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  %s:%d: expected %s\n", __FILE__, __LINE__, #cond);                  \
            case_failed = 1;                                                                       \
        }                                                                                          \
    } while (0)

__attribute__((unused)) static void check_case(const char *name, void (*fn)(void))
{
    case_failed = 0;
    fn();
    fflush(stderr);
    CHECK(!case_failed, "%s", name);
    fflush(stdout);
}

#define CHECK_DONE()                                                                               \
    (printf("%d passed, %d failed\n", check_cases - check_failures, check_failures),               \
     check_failures ? 1 : 0)

#endif
