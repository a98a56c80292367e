#include "phases.h"
const TestList phase6_tests = {0, 0};
