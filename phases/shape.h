/* The ladder's cases: the struct its rows' shapes fill, and how a table
 * row names one (CASE). The harness holds it by pointer; --set writes the
 * keys phases/ladder.c registers. */
#ifndef PHASES_SHAPE_H
#define PHASES_SHAPE_H

#include "../harness/harness.h"

/* The ladder's case parameters (the harness's TestCase): each field has one meaning (0: the test does
 * not use it). Phases 1-3 size their building-block operands with the
 * first group; the Delta-Net tests (phases 4-8) use the rest. */
struct TestCase {
    int len;        /* a vector operation's elements; cumsum: tokens per segment */
    int rows, cols; /* a matrix operand (broadcast_mul, transpose; GEMM: the M x N output) */
    int inner;      /* GEMM: the summed dimension K */
    int order;      /* an order x order matrix (masks, the triangular system) */
    int rhs;        /* triangular solve: right-hand sides (columns of B and X) */
    int count;      /* independent problems in one launch: cumsum segments, decay-mask heads */
    int T, n_seqs, H_k, H_v, D_k, D_v, chunk;
    int head_map; /* HEAD_MAP_* */
    int decay;    /* DECAY_*: which log-decays the inputs draw */
    int state;    /* initial state's scale: 0 zero, s > 0 entries N(0, (0.3 s)^2) */
    int chunk_index;  /* a single-chunk test (phase 7): the chunk it checks */
    int decode_steps; /* prefill_then_decode: one-token recurrent steps after the prefill */
    int past_split;   /* auto_*: T = the backend's recurrent/chunked split + past_split */
    /* the library's entry point (gdn_* rows, phases/phase8_gdn.c) */
    int kda;       /* 1: the per-key-dimension gate g [D_k, H_v, T, n_seqs]; 0: scalar */
    int permuted;  /* 1: q, k, v passed as non-contiguous views */
    int snapshots; /* K: state snapshots in dst (>= 1) */
    int path;      /* kdn_path the call asks for (0: KDN_PATH_AUTO) */
    int state_dst; /* STATE_IN_DST, or where the call's state_dst points (phases/phase8_gdn.c) */
};
typedef struct TestCase Shape;

enum { HEAD_MAP_TILED = 0, HEAD_MAP_BLOCK = 1, HEAD_MAP_BOTH = 2 /* a test that runs each */ };
enum { DECAY_QWEN = 0, DECAY_STRONG = 1, DECAY_WEAK = 2, DECAY_BURSTY = 3 /* weak, with strong bursts */ };

/* A row's case: a static compound literal (file scope), e.g. CASE(.len = 1024). */
#define CASE(...) (&(const Shape){__VA_ARGS__})

#endif
