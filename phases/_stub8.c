#include "phases.h"
const TestList phase8_tests = {0, 0};
