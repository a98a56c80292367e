// The CPU SIMT executor's limits (simt_watchdog.cpp): the signal handlers,
// the fiber stacks' guard regions and the CPU-time timer that turn a hang, a
// launch out of time, a stack overflow or a division by zero in a kernel into
// a failed launch.
#pragma once
#include "simt_executor.h"

namespace kdn_simt {

// The launch fails as the timer found it (E.expired): thread t hangs, or the
// launch is out of time (counted).
void fail_expired(Executor &E, int t);
// The thread's fiber stacks, each above a PROT_NONE guard region, the
// alternate signal stack and the CPU-time timer, made at its first launch.
bool ensure_resources(Executor &E);
// The launch takes its host thread's signal state (false: nothing changed,
// a handler cannot be installed), and gives it back.
bool enter_launch(Executor &E);
void leave_launch(Executor &E);

}  // namespace kdn_simt
