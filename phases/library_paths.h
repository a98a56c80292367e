/* The library's paths as the tests run them: its per-chunk buffers as guarded
 * test buffers, the layer-row adapters of kdn_layer_run, and the reference
 * of one chunk in kdn.h's per-chunk layout (library_paths.c). */
#ifndef LIBRARY_PATHS_H
#define LIBRARY_PATHS_H

#include "shape.h"
#include "../kernels/kdn.h"
#include "deltanet_data.h"

/* The product paths live in the library (kdn.h: kdn_layer_run, the
 * library's dispatch). The tests give them their per-chunk buffers as guarded
 * device buffers of the test, one per quantity (an overrun of one is caught
 * on its own), so that phases 6 and 7 can check each intermediate. */
typedef KdnChunkBuffers ChunkQuantities;
int chunk_count(const KdnShape *s); /* ceil(T / C) */
void *chunked_prepare(Ctx *c, const KdnShape *s);
/* Layer-row adapters: kdn_layer_run with path CHUNKED, AUTO, RECURRENT
 * (scratch from chunked_prepare; unused by the last). */
void deltanet_chunked(void *scratch, const KdnLayerCall *c);
void deltanet_auto(void *scratch, const KdnLayerCall *c);
void deltanet_recurrent(void *scratch, const KdnLayerCall *c);

/* Reference side: one chunk's inputs gathered from the ggml tensors (double,
 * token rows) and its ref_chunk_intra, in host scratch reused chunk after
 * chunk (the harness caps a test's host arrays). */
typedef struct {
    int n;                        /* tokens of the chunk last gathered */
    double *q, *k, *v, *g, *beta; /* its inputs */
    RefChunk r;
} RefChunkWork;
RefChunkWork ref_chunk_work(Ctx *c, const KdnShape *s);
void ref_chunk_of(RefChunkWork *w, const DnData *d, int seq, int h, int ch);
/* Copies w's gamma, to_end = exp(gamma_last - gamma), Tinv, U, W and P =
 * (Q K^T) .* decay (Tinv and P skipped where NULL) into chunk ci of padded
 * arrays in kdn.h's layout (zero-initialised: rows past n stay 0). */
void ref_chunk_place(const RefChunkWork *w, const KdnShape *s, size_t ci, double *gamma, double *to_end,
                     double *Tinv, double *U, double *W, double *P);

#endif
