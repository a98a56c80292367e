// The per-device, per-kernel cache of runtime answers (query_cache.h).
#include "query_cache.h"

// Entries [from, used) searched; -1 when none matches.
static int find(const KdnQueryCache *c, int from, int used, const void *kernel, int device, int arg) {
    for (int i = from; i < used; i++) {
        const KdnQueryEntry *e = &c->entries[i];
        if (e->kernel == kernel && e->device == device && e->arg == arg) return i;
    }
    return -1;
}

// A hit takes no lock (every launch of a decode step asks): an entry is
// written whole before `used` counts it (release), and a reader reads no
// further than the `used` it loaded (acquire); entries never change once
// counted. A miss takes the lock, looks again past what it saw (another
// thread may have added the key meanwhile) and asks the runtime at most once
// per key.
extern "C" int kdn_cached_query(KdnQueryCache *cache, const void *kernel, int device, int arg, kdn_query_fn query) {
    const int seen = __atomic_load_n(&cache->used, __ATOMIC_ACQUIRE);
    int at = find(cache, 0, seen, kernel, device, arg);
    if (at >= 0) return cache->entries[at].answer;
    pthread_mutex_lock(&cache->lock);
    const int used = cache->used;
    at = find(cache, seen, used, kernel, device, arg);
    const int answer = at >= 0 ? cache->entries[at].answer : query(kernel, device, arg);
    if (at < 0 && answer >= 0 && used < KDN_QUERY_CACHE_SLOTS) {
        cache->entries[used] = KdnQueryEntry{kernel, device, arg, answer};
        __atomic_store_n(&cache->used, used + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&cache->lock);
    return answer;
}
