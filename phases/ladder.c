/* The ladder as the harness runs it: its test tables in order, the --set
 * keys of its case (Shape) with the kernels' limits, its phases' titles and
 * its renamed tests (programs/test_deltanet.c registers it). */
#include "phases.h"

#include "../kernels/kdn.h" /* the kernels' limits */

#include <stddef.h>
#include <stdio.h>

static const TestList *const tables[] = {
    &phase1_tests, &phase2_tests, &phase3_tests, &phase4_tests,
    &phase5_tests, &phase6_tests, &phase7_tests, &phase8_tests, &phase8_gdn_tests, &phase8_golden_tests,
    &phase8_paths_tests, &phase8_numerics_tests,
};

static const char *const titles[MAX_PHASE + 1] = {
    "", "element-wise", "triangular", "GEMM", "decay mask",
    "attention matrix", "intra-chunk", "state interaction", "full multi-chunk Delta-Net",
};

static const char *const head_maps[] = {"tiled", "block", NULL};

int widest_D_k(void) {
    int r = kdn_recurrent_limits.max_D_k, c = kdn_chunked_limits.max_D_k;
    return r > c ? r : c;
}

/* D_k's bound is the widest layer kernel's and chunk's the chunked kernels'
 * (kdn.h's KdnLimits); a row whose kernels take less skips the shape,
 * saying why (phases/layer_variants.c). Filled by ladder_suite. */
enum { KEY_D_K = 4, KEY_CHUNK = 6 };
static SetKey keys[] = {
    {"T", offsetof(Shape, T), 1, 1 << 20, false, NULL, NULL, true},
    {"n_seqs", offsetof(Shape, n_seqs), 1, 65535, false, NULL, NULL, true},
    {"H_k", offsetof(Shape, H_k), 1, 65535, false, NULL, NULL, true},
    {"H_v", offsetof(Shape, H_v), 1, 65535, false, NULL, ", a multiple of H_k", true},
    [KEY_D_K] = {"D_k", offsetof(Shape, D_k), 1, 0, false, NULL, " (the kernels' limit)", true},
    {"D_v", offsetof(Shape, D_v), 1, 4096, false, NULL, NULL, true},
    [KEY_CHUNK] = {"chunk", offsetof(Shape, chunk), 0, 0, true, NULL, NULL, false},
    {"head_map", offsetof(Shape, head_map), 0, 1, false, head_maps, NULL, false},
};

/* --set reaches the Delta-Net rows: those with a chunk size. */
static bool takes_set(const TestCase *c) { return c->chunk != 0; }

static int check_case(const Test *row, const TestCase *c, char *err, size_t size) {
    if (c->H_k > 0 && c->H_v % c->H_k != 0) /* phase 4-5 rows have no heads */
        return snprintf(err, size, "--set: test %s would have H_v = %d, not a multiple of H_k = %d (the row's H_k: "
                        "set both)", row->name, c->H_v, c->H_k), 2;
    return 0;
}

/* The chunked layer's tests and variant were named two_launch (two kernels
 * where a one-launch form also was): old logs compare under these names and
 * the renamed tests keep their inputs (docs/ci.md, "Renamed tests and
 * variants"); bench rows carry the variant as their label. */
static const Rename renames[] = {
    {"two_launch", "chunked"}, {"bench:two_launch", "bench:chunked"},
    {"decay_range_two_launch", "decay_range_chunked"}, {"decay_range_two_launch_c32", "decay_range_chunked_c32"},
    {"grid_two_launch", "grid_chunked"}, {"nonfinite_two_launch", "nonfinite_chunked"},
    {"nonfinite_two_launch_c32", "nonfinite_chunked_c32"}, {"recurrent_vs_two_launch", "recurrent_vs_chunked"},
    {"two_launch_T1", "chunked_T1"}, {"two_launch_T64", "chunked_T64"}, {"two_launch_gqa3_c32", "chunked_gqa3_c32"},
    {"two_launch_intra", "chunked_intra"}, {"two_launch_intra_c32_strong", "chunked_intra_c32_strong"},
    {"two_launch_intra_vs_unfused", "chunked_intra_vs_unfused"}, {"two_launch_ragged", "chunked_ragged"},
    {"two_launch_scalar_c32", "chunked_scalar_c32"}, {"two_launch_scalar_odd_dims", "chunked_scalar_odd_dims"},
    {"two_launch_state_all", "chunked_state_all"}, {"two_launch_state_chunk", "chunked_state_chunk"},
    {"two_launch_state_x1000", "chunked_state_x1000"}, {"two_launch_strong_decay", "chunked_strong_decay"},
    {"two_launch_unaligned_q", "chunked_unaligned_q"}, {"two_launch_vs_unfused", "chunked_vs_unfused"},
};

const Suite *ladder_suite(void) {
    static Suite suite = {
        .program = "test_deltanet",
        .phase_titles = titles,
        .tables = tables,
        .n_tables = sizeof tables / sizeof tables[0],
        .case_size = sizeof(Shape),
        .set_keys = keys,
        .n_set_keys = sizeof keys / sizeof keys[0],
        .set_rows = "a Delta-Net shape (phases 4-8)",
        .takes_set = takes_set,
        .check_case = check_case,
        .renames = renames,
        .n_renames = sizeof renames / sizeof renames[0],
    };
    keys[KEY_D_K].hi = widest_D_k();
    keys[KEY_CHUNK].lo = kdn_chunked_limits.chunks[0];
    keys[KEY_CHUNK].hi = kdn_chunked_limits.chunks[1];
    return &suite;
}
