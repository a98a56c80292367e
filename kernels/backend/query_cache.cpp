// The per-device, per-kernel cache of runtime answers (query_cache.h).
#include "query_cache.h"

static int find(const KdnQueryCache *c, const void *kernel, int device, int arg) {
    for (int i = 0; i < c->used; i++) {
        const KdnQueryEntry *e = &c->entries[i];
        if (e->kernel == kernel && e->device == device && e->arg == arg) return i;
    }
    return -1;
}

extern "C" int kdn_cached_query(KdnQueryCache *cache, const void *kernel, int device, int arg, kdn_query_fn query) {
    pthread_mutex_lock(&cache->lock);
    const int at = find(cache, kernel, device, arg);
    int answer;
    if (at >= 0) {
        answer = cache->entries[at].answer;
    } else {
        answer = query(kernel, device, arg);
        if (answer >= 0 && cache->used < KDN_QUERY_CACHE_SLOTS)
            cache->entries[cache->used++] = KdnQueryEntry{kernel, device, arg, answer};
    }
    pthread_mutex_unlock(&cache->lock);
    return answer;
}
