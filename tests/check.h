/* The check of the standalone test programs (test_graph, test_threads,
 * test_tuning): a condition that does not hold is printed with the program's
 * name, CHECK_PROGRAM (defined before this header), and where it stands, and
 * counted in `failures`, which the program's main turns into its status. */
#ifndef KDN_TESTS_CHECK_H
#define KDN_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            printf("%s: %s:%d: check failed: %s\n", CHECK_PROGRAM, __FILE__, __LINE__, #cond); \
            failures++;                                                                          \
        }                                                                                        \
    } while (0)

#endif
