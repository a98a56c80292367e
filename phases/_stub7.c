#include "phases.h"
const TestList phase7_tests = {0, 0};
