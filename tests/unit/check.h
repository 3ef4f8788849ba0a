/* check.h — the tiny assertion kit of codemcp's C unit tests.
 *
 * CHECK(cond, fmt, ...) counts a case, prints "ok   <what>" or "FAIL file:line: <what>",
 * and CHECK_DONE() prints the "N passed, N failed" line and yields main's exit status. */
#ifndef CODEMCP_TEST_CHECK_H
#define CODEMCP_TEST_CHECK_H

#include <stdio.h>

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

#define CHECK_DONE()                                                                               \
    (printf("%d passed, %d failed\n", check_cases - check_failures, check_failures),               \
     check_failures ? 1 : 0)

#endif
