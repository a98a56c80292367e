// The key head a value head reads (kdn.h's KdnShape.head_map), for every
// kernel that maps value heads to key heads; the host reference has its own
// (ref_key_head), so that the two stay independent.
#pragma once
#include "backend/backend.h"
#include "kdn.h"

__device__ __forceinline__ int kdn_key_head(int h, int H_k, int H_v, int head_map) {
    return head_map == 0 ? h % H_k : h / (H_v / H_k); // 0: tiled (ggml), 1: block; mutate: head_map
}

// What every layer kernel (recurrent, chunked) refuses alike:
// empty dimensions, grids past the y/z limit (heads on y, sequences on z) and
// an unknown or impossible head map. Each kernel adds its own limits (D_k,
// chunk, K) after these. NULL when the shape passes.
static inline const char *kdn_layer_shape_unsupported(const KdnShape *s) {
    if (s->T < 0 || s->n_seqs < 1 || s->H_k < 1 || s->H_v < 1 || s->D_k < 1 || s->D_v < 1)
        return "empty or negative dimension";
    if (s->H_v > 65535 || s->n_seqs > 65535) return "H_v or n_seqs > 65535 (grid y/z limit)";
    if (s->head_map != 0 && s->head_map != 1) return "head_map must be 0 (tiled) or 1 (block)";
    if (s->head_map == 1 && s->H_v % s->H_k != 0) return "block head map needs H_v to be a multiple of H_k";
    return NULL;
}
