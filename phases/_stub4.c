#include "phases.h"
const TestList phase4_tests = {0, 0};
