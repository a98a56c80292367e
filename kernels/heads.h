// The key head a value head reads (kdn.h's KdnShape.head_map), for every
// kernel that maps value heads to key heads; the host reference has its own
// (ref_key_head), so that the two stay independent.
#pragma once
#include "backend/backend.h"

__device__ __forceinline__ int kdn_key_head(int h, int H_k, int H_v, int head_map) {
    return head_map == 0 ? h % H_k : h / (H_v / H_k); // 0: tiled (ggml), 1: block
}
