/* The Delta-Net layer's inputs as files (--dump, --load; docs/bench.md):
 * which tensors, their numpy shapes (ggml reversed): q, k (n_seqs, T, H_k,
 * D_k); v (n_seqs, T, H_v, D_v); g, beta (n_seqs, T, H_v); state (n_seqs,
 * H_v, D_v, D_k). */
#ifndef DELTANET_FILES_H
#define DELTANET_FILES_H

#include "shape.h"

#include <stddef.h>

extern const char *const layer_inputs[6]; /* "q", "k", "v", "g", "beta", "state" */
/* The numpy shape of one of them for sh; returns ndim. */
int layer_tensor_shape(const Shape *sh, const char *tensor, size_t *shape);
/* T, n_seqs, H_k, H_v, D_k, D_v of the layer inputs in dir for test (a
 * TestList's shape_from_files); 0, or -1 with a message when a file is
 * missing, malformed or inconsistent. */
int layer_shape_from_files(const char *dir, const char *test, Shape *sh, char *err, size_t err_size);

#endif
