/* The ladder's test tables in order, for the programs that run them
 * (programs/test_deltanet.c passes them to the runner). */
#include "phases.h"

const TestList *const ladder_tables[] = {
    &phase1_tests, &phase2_tests, &phase3_tests, &phase4_tests,
    &phase5_tests, &phase6_tests, &phase7_tests, &phase8_tests, &phase8_gdn_tests, &phase8_golden_tests,
    &phase8_paths_tests, &phase8_numerics_tests,
};
const int ladder_table_count = sizeof ladder_tables / sizeof ladder_tables[0];
