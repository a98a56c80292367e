/* Realistic Delta-Net inputs in ggml's layout, as Qwen3-Next produces them. */
#ifndef DELTANET_DATA_H
#define DELTANET_DATA_H

#include "shape.h"
#include "../kernels/kdn.h"
#include "../reference/deltanet.h"

typedef struct {
    KdnShape ks;
    RefShape rs;
    size_t n_qk, n_v, n_gb, n_state; /* element counts */
    float *q, *k, *v, *g, *beta, *state;
} DnData;

/* q, k L2-normalised per head and token (q also scaled by 1/sqrt(D_k)),
 * v ~ N(0,1), beta = sigmoid(N(0,1)), g = -exp(A_h) softplus(x + dt_bias_h)
 * with Qwen3-Next's parameter ranges (or strong / near-zero decay), and an
 * initial state that is zero or N(0, 0.3^2). With --load they are read from
 * files instead (a shape that does not fit them fails the test). With --dump
 * they are written out (harness/tensors.h gives their numpy shapes). */
void dn_generate(Ctx *c, const Shape *sh, DnData *d);
/* Device copies of the inputs. */
typedef struct {
    float *q, *k, *v, *g, *beta, *state;
} DnDevice;
void dn_upload(Ctx *c, const DnData *d, DnDevice *dd);
/* A test's usual start: shape for this backend (dn_backend_shape), inputs
 * generated and uploaded; returns the shape used. */
Shape dn_setup(Ctx *c, const Shape *shape, DnData *d, DnDevice *dd);
RefInputs dn_ref_inputs(const DnData *d);
/* The token recurrence over every head of every sequence (the ground truth
 * of a layer row): ref_deltanet_recurrent head by head, the (sequence, head)
 * pairs spread over the host's cores; the same numbers as one call over the
 * whole layer. o: [D_v, H_v, T, n_seqs], state_out: [D_k, D_v, H_v, n_seqs]. */
void dn_reference(Ctx *c, const DnData *d, double *o, double *state_out);
/* Widens a float array into a new double array owned by the test. */
double *dn_widen(Ctx *c, const float *x, size_t n);
/* The shape as printed on the test line. */
void dn_describe(Ctx *c, const Shape *sh);
/* The same with a note appended (e.g. how the CPU build reduced the shape). */
void dn_describe_note(Ctx *c, const Shape *sh, const char *note);
/* A layer's outputs o and final state against the reference's, each named by
 * the shape's head map ("o (tiled map)", "state (block map)"). */
void dn_expect_layer(Ctx *c, const Shape *sh, const float *o, const double *o_ref, const float *s_out,
                     const double *s_ref, Tol tol);


/* Algorithmic cost of one layer call: bytes = inputs, outputs and both
 * states read or written once; flops = the chunked form's multiply-adds x 2,
 * the last chunk of each sequence counted at its length (docs/bench.md). */
void dn_layer_cost(const KdnShape *sh, double *bytes, double *flops);

/* The shape's KdnShape, RefShape and element counts (dn_generate's first step). */
void dn_count(const Shape *sh, DnData *d);

/* The least work (harness.h) of a row that runs a whole layer of `shape`:
 * the token recurrence's arithmetic, once in the reference and once in the
 * kernels, at the shape this backend runs (any path does at least about
 * that much; a row that runs more is still refused past the limit). */
Work dn_layer_work(const Shape *shape);

/* Reference chunk arrays for n tokens (all fields allocated). */
RefChunk dn_ref_chunk(Ctx *c, int n, int D_k, int D_v);
/* Shape to run: the CPU executor runs a quarter of the heads (never fewer
 * than one key head and the same grouping), every other parameter as given;
 * with --load, the files' shape unchanged. */
Shape dn_backend_shape(const Shape *sh);
/* Single head, single sequence, one chunk of sh->chunk tokens. */
Shape dn_chunk_shape(const Shape *sh);
#endif
