/* The generated grid: every layer variant (layer_variants.h) on cases drawn
 * from T in {1, 2, C-1, C, C+1, 2C+1, 1000}, D_k and D_v in {128, 100, 70,
 * 64, 33, 16}, H_v/H_k in {1, 2, 3, 4} (H_k = 2, so the two head maps read
 * different key heads), head map tiled and block, chunk C = 32 and 64, decay
 * qwen, strong, weak and bursty, initial state scale 0, 1 and 1000; B = 2
 * sequences (1 at T = 1000). Each case is checked against the recurrence on
 * every head; a case the variant documents refusing must be refused, write
 * nothing, and is counted on the row's line as refused.
 *   make test: the subset below (GRID_SUBSET cases per variant).
 *   KDN_GRID=full (make test-grid): the whole product, 48384 cases per variant (hours on
 *   a GPU build, days on the CPU: shard it);
 *   KDN_GRID=full:I/N its shard I of N.
 * docs/architecture.md describes both. */
#include "grid.h"

#include "deltanet_data.h"
#include "layer_variants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int grid_D[] = {128, 100, 70, 64, 33, 16};
static const int grid_ratio[] = {1, 2, 3, 4};
static const int grid_map[] = {HEAD_MAP_TILED, HEAD_MAP_BLOCK};
static const int grid_chunk[] = {32, 64};
static const int grid_decay[] = {DECAY_QWEN, DECAY_STRONG, DECAY_WEAK, DECAY_BURSTY};
static const int grid_state[] = {0, 1, 1000};
enum { N_T = 7, GRID_H_K = 2, GRID_SUBSET = 12 };
#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int grid_T(int index, int C) {
    const int T[N_T] = {1, 2, C - 1, C, C + 1, 2 * C + 1, 1000};
    return T[index];
}

/* Value indices of one case: T, D_k, D_v, ratio, map, chunk, decay, state. */
enum { P_T, P_DK, P_DV, P_RATIO, P_MAP, P_CHUNK, P_DECAY, P_STATE, N_PARAMS };
static const int grid_len[N_PARAMS] = {N_T, LEN(grid_D), LEN(grid_D), LEN(grid_ratio), LEN(grid_map),
                                       LEN(grid_chunk), LEN(grid_decay), LEN(grid_state)};

/* Full grid: case i is i's mixed-radix digits, T slowest. */
static void full_case(long i, int idx[N_PARAMS]) {
    for (int p = N_PARAMS - 1; p >= 0; p--) {
        idx[p] = (int)(i % grid_len[p]);
        i /= grid_len[p];
    }
}

/* Subset: case i = 0..11 takes T[3i mod 7], D_k[i mod 6], D_v[(5i + 2) mod 6],
 * ratio[(i + 1) mod 4], map[(i / 2) mod 2], chunk[(i / 4) mod 2],
 * decay[3i mod 4], state[i mod 3]: every value of every parameter at least
 * once, in varied company (docs/tolerances.md lists the 12 cases). */
static void subset_case(long i, int idx[N_PARAMS]) {
    idx[P_T] = (int)(3 * i % N_T);
    idx[P_DK] = (int)(i % 6);
    idx[P_DV] = (int)((5 * i + 2) % 6);
    idx[P_RATIO] = (int)((i + 1) % 4);
    idx[P_MAP] = (int)(i / 2 % 2);
    idx[P_CHUNK] = (int)(i / 4 % 2);
    idx[P_DECAY] = (int)(3 * i % 4);
    idx[P_STATE] = (int)(i % 3);
}

static Shape case_shape(const int idx[N_PARAMS]) {
    Shape sh = {0};
    sh.chunk = grid_chunk[idx[P_CHUNK]];
    sh.T = grid_T(idx[P_T], sh.chunk);
    sh.n_seqs = sh.T == 1000 ? 1 : 2;
    sh.H_k = GRID_H_K;
    sh.H_v = GRID_H_K * grid_ratio[idx[P_RATIO]];
    sh.D_k = grid_D[idx[P_DK]];
    sh.D_v = grid_D[idx[P_DV]];
    sh.head_map = grid_map[idx[P_MAP]];
    sh.decay = grid_decay[idx[P_DECAY]];
    sh.state = grid_state[idx[P_STATE]];
    return sh;
}

/* Case k of the run (the subset, or the full grid's shard): 0 past the end. */
static int grid_case(long k, long first, long step, int full, Shape *sh) {
    long cases = GRID_SUBSET, i = first + k * step;
    if (full)
        for (int p = (cases = 1, 0); p < N_PARAMS; p++) cases *= grid_len[p];
    if (i >= cases) return 0;
    int idx[N_PARAMS];
    (full ? full_case : subset_case)(i, idx);
    *sh = case_shape(idx);
    return 1;
}

static void describe_case(const Shape *sh, char *buf, size_t size) {
    static const char *const decay[] = {"qwen", "strong", "weak", "bursty"};
    snprintf(buf, size, "T=%d B=%d Hk=%d Hv=%d Dk=%d Dv=%d C=%d map=%s decay=%s s0=x%d", sh->T, sh->n_seqs, sh->H_k,
             sh->H_v, sh->D_k, sh->D_v, sh->chunk, sh->head_map ? "block" : "tiled", decay[sh->decay], sh->state);
}

/* One case: 1 if the variant refused it (as documented), else 0. */
static int run_case(const Test *t, Ctx *c, const LayerVariant *v, long i, const Shape *sh) {
    DnData d;
    DnDevice dd;
    dn_generate(c, sh, &d);
    dn_upload(c, &d, &dd);
    if (v->refuses(&d.ks)) {
        expect_refused(c, v, &d.ks, &dd, d.n_v, t->tol);
        return 1;
    }
    double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
    dn_reference(c, &d, o_ref, s_ref);
    float *o = dev_out(c, "o", d.n_v), *st = dev_out(c, "state_out", d.n_state);
    const KdnLayerCall call = kdn_layer_contiguous(&d.ks, dd.q, dd.k, dd.v, dd.g, dd.beta, dd.state, o, st);
    v->run(v->prepare ? v->prepare(c, &d.ks) : NULL, &call);
    if (dev_sync(c) != 0) return 0;
    char what[32];
    snprintf(what, sizeof what, "o #%ld", i);
    expect_close(c, what, o, o_ref, sh->T * sh->n_seqs * sh->H_v, sh->D_v, t->tol);
    snprintf(what, sizeof what, "state #%ld", i);
    expect_close(c, what, st, s_ref, sh->n_seqs * sh->H_v * sh->D_v, sh->D_k, t->tol);
    return 0;
}

/* KDN_GRID: unset: the subset; "full": every case; "full:I/N": cases
 * i = I, I + N, I + 2N, ... (shard I of N, for a nightly job on N machines). */
static int grid_shard(long *first, long *step) {
    const char *g = getenv("KDN_GRID");
    *first = 0, *step = 1;
    if (!g || strncmp(g, "full", 4) != 0) return 0;
    if (g[4] == ':' && (sscanf(g + 5, "%ld/%ld", first, step) != 2 || *step < 1 || *first < 0 || *first >= *step))
        *first = 0, *step = 1;
    return 1;
}

void t_grid(const Test *t, Ctx *c) {
    const LayerVariant *v = layer_variant(t->variant);
    if (!v) {
        test_fail(c, "variant '%s' is not in layer_variants.h", t->variant);
        return;
    }
    long first, step, refused = 0, k = 0;
    int full = grid_shard(&first, &step);
    Shape sh;
    for (; !test_failed(c) && grid_case(k, first, step, full, &sh); k++) {
        TestMark mark = test_mark(c);
        refused += run_case(t, c, v, first + k * step, &sh);
        test_release(c, mark);
        if (test_failed(c)) {
            char desc[160];
            describe_case(&sh, desc, sizeof desc);
            test_fail(c, "case #%ld: %s", first + k * step, desc);
        }
    }
    set_shape_desc(c, "%s grid: %ld cases run (from #%ld, step %ld), %ld of them refused as documented",
                   full ? "full" : "subset", k, first, step, refused);
}
