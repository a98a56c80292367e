/* The layer variants (layer_variants.h): each implementation's entry
 * points, scratch and the shapes it documents refusing. */
#include "layer_variants.h"
#include "kernels/ladder.h"

#include "library_paths.h"
#include "pipeline.h"

#include <string.h>

static void *unfused_prepare(Ctx *c, const KdnShape *s) {
    ChunkWork *w = (ChunkWork *)host_d(c, sizeof(ChunkWork) / sizeof(double) + 1);
    chunk_work_alloc(c, w, s->chunk, s->D_k, s->D_v);
    return w;
}

static void unfused_run(void *w, const KdnLayerCall *c) {
    deltanet_unfused(w, &c->s, c->q, c->k, c->v, c->g, c->beta, c->state_in, c->o, c->snapshots);
}

/* What every kernel refuses: a block map whose heads do not group. */
static const char *ungrouped(const KdnShape *s) {
    return s->head_map == HEAD_MAP_BLOCK && s->H_v % s->H_k != 0 ? "block head map with H_v not a multiple of H_k"
                                                                  : NULL;
}

/* Past a kernel's own limits (KdnLimits, kdn.h), then ungrouped heads. */
static const char *outside(const KdnLimits *l, const KdnShape *s) {
    if (s->D_k > l->max_D_k) return "D_k past the kernel's max_D_k (docs/kernels.md)";
    if (l->chunks[0] && !kdn_takes_chunk(l, s->chunk)) return "a chunk size the kernel is not built for";
    return ungrouped(s);
}

static const char *recurrent_refuses(const KdnShape *s) { return outside(&kdn_recurrent_limits, s); }

/* The chunked kernels stage a chunk's keys in 64 KB of LDS. */
static const char *chunked_refuses(const KdnShape *s) { return outside(&kdn_chunked_limits, s); }

/* What the library's dispatch picks for the shape (kdn_layer_chunked: a
 * D_k past the chunked kernels' goes to the recurrent kernel at any T). */
static const char *auto_refuses(const KdnShape *s) {
    KdnLayerCall c = {.s = *s, .K = 1};
    return kdn_layer_chunked(&c, KDN_PATH_AUTO) ? chunked_refuses(s) : recurrent_refuses(s);
}

const LayerVariant layer_variants[LAYER_VARIANT_COUNT] = {
    [LAYER_UNFUSED] = {"unfused", "the seed ladder's pipeline: one small kernel per step, chunk by chunk and head by head",
                       "deltanet_unfused (phases/pipeline.c)", unfused_prepare, unfused_run, ungrouped},
    [LAYER_RECURRENT] = {"recurrent", "the token-recurrent kernel: one launch, O(T) steps per state column",
                         "kdn_layer_run, path RECURRENT: kdn_deltanet_recurrent_call (kernels/deltanet_recurrent.cpp)", NULL, deltanet_recurrent,
                         recurrent_refuses},
    [LAYER_CHUNKED] = {"chunked",
                          "the product's chunked prefill: every chunk's intra-chunk quantities at once, then the "
                          "state pass",
                          "kdn_layer_run, path CHUNKED: kdn_chunked_intra + kdn_chunked_state "
                          "(kernels/chunked_intra.cpp, chunked_state.cpp)",
                          chunked_prepare, deltanet_chunked, chunked_refuses},
    [LAYER_AUTO] = {"auto", "the library's choice: recurrent up to kdn_gdn_recurrent_max_t(n_seqs) tokens, else chunked",
                    "kdn_layer_run, path AUTO (kernels/dispatch.c: what kdn_gated_delta_net ends in)", chunked_prepare, deltanet_auto,
                    auto_refuses},
};

bool layer_variant_refuses(Ctx *c, const LayerVariant *v, const Shape *sh) {
    DnData d;
    dn_count(sh, &d);
    const char *why = v->refuses ? v->refuses(&d.ks) : NULL;
    if (why) test_skip(c, "%s refuses: %s", v->name, why);
    return why != NULL;
}

const LayerVariant *layer_variant(const char *name) {
    for (int i = 0; i < LAYER_VARIANT_COUNT; i++)
        if (strcmp(layer_variants[i].name, name) == 0) return &layer_variants[i];
    return NULL;
}

void expect_refused(Ctx *c, const LayerVariant *v, const KdnShape *s, const DnDevice *dd, size_t n_o, Tol tol) {
    float *o = dev_out(c, "o", n_o), *s_out = dev_out(c, "state_out", (size_t)s->n_seqs * s->H_v * s->D_v * s->D_k);
    const KdnLayerCall call = kdn_layer_contiguous(s, dd->q, dd->k, dd->v, dd->g, dd->beta, dd->state, o, s_out);
    v->run(v->prepare ? v->prepare(c, s) : NULL, &call);
    const char *why = kdn_sync();
    if (!why || !strstr(why, "refused")) {
        test_fail(c, "%s, C=%d D_k=%d: not refused (%s)", v->name, s->chunk, s->D_k, why ? why : "ran");
        return;
    }
    /* written[e] = 1 where o[e] lost the NaN it started with; must be 0 */
    float *written = host_f(c, n_o);
    double *none = host_d(c, n_o);
    download(c, written, o, n_o);
    for (size_t e = 0; e < n_o; e++) {
        written[e] = written[e] == written[e];
        none[e] = 0.0;
    }
    expect_close_host(c, "o elements written", written, none, (int)(n_o / s->D_v), s->D_v, tol);
}
