#include "phases.h"
const TestList phase5_tests = {0, 0};
