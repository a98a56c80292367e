/* What the entry point (gated_delta_net.c) takes from the dispatch
 * (dispatch.c) beyond kdn.h: the default chunk size and the workspace
 * layout of the chunked path, a K > 1 call's split included. */
#ifndef KDN_DISPATCH_H
#define KDN_DISPATCH_H

#include "kdn.h"

/* The chunk size of a call that leaves it to the library (chunk = 0): the
 * tuning's, else (NULL or 0) the backend's built-in choice. */
int kdn_default_chunk(const KdnShape *s, const kdn_tuning *t);

/* Workspace buffers lie 64 floats apart at least: every one 256-byte
 * aligned when the first is. */
static inline size_t aligned_floats(size_t floats) { return (floats + 63) / 64 * 64; }

static inline float *take(float **at, size_t floats) {
    float *p = *at;
    *at += aligned_floats(floats);
    return p;
}

/* A K > 1 call on the chunked path runs each sequence's first T - K tokens
 * chunked and its last K on the recurrent kernel (dispatch.c). */
static inline int splits_snapshots(const KdnLayerCall *c) { return c->K > 1; }

/* Floats of one sequence's state, [D_k, D_v, H_v]. */
static inline size_t state_floats(const KdnShape *s) { return (size_t)s->D_k * s->D_v * s->H_v; }

/* The shape the chunk buffers serve: the call's, or (split) one sequence's first T - K tokens. */
static inline KdnShape buffers_shape(const KdnLayerCall *c) {
    KdnShape s = c->s;
    if (splits_snapshots(c)) s.T -= c->K, s.n_seqs = 1;
    return s;
}

#endif
