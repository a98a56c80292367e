/* The answers of the runtime queries the launchers ask (a kernel's PDL
 * capability, its workgroups per round), kept per device, kernel and
 * argument (threads per workgroup), so that a process driving several GPUs,
 * or several kernels, gets each its own answer. Thread-safe: calls from any
 * host threads may meet (a kept answer is read without a lock; a missing one
 * is asked under the cache's lock, once per key).
 * A query's negative answer (it failed) is returned and not kept, so the
 * next call asks again. When the table is full, answers are asked each time
 * and not kept (right, only slower). */
#ifndef KDN_QUERY_CACHE_H
#define KDN_QUERY_CACHE_H

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The answer for `kernel` with `arg` on `device`; < 0: the query failed. */
typedef int (*kdn_query_fn)(const void *kernel, int device, int arg);

enum { KDN_QUERY_CACHE_SLOTS = 64 };

typedef struct {
    const void *kernel;
    int device, arg, answer;
} KdnQueryEntry;

typedef struct {
    pthread_mutex_t lock;
    int used;
    KdnQueryEntry entries[KDN_QUERY_CACHE_SLOTS];
} KdnQueryCache;

#define KDN_QUERY_CACHE_INIT {PTHREAD_MUTEX_INITIALIZER, 0, {{0, 0, 0, 0}}}

int kdn_cached_query(KdnQueryCache *cache, const void *kernel, int device, int arg, kdn_query_fn query);

#ifdef __cplusplus
}
#endif
#endif
