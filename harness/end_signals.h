/* The signals that end a run (SIGINT, SIGTERM, SIGPIPE, SIGHUP), blocked
 * around work that must not be cut in half: a rename of a result file, the
 * life of a temp file. Needs _POSIX_C_SOURCE (sigset_t). */
#ifndef HARNESS_END_SIGNALS_H
#define HARNESS_END_SIGNALS_H

#include <signal.h>

/* Blocks them (report.c) and returns the mask to restore with sigprocmask. */
sigset_t block_end_signals(void);

#endif
