/* The layer variants: one table of every implementation of the whole gated
 * Delta-Net layer that the tests run. Phase 8's layer rows, the comparison
 * rows (compare_*, the *_vs_* agreement rows), the generated grid (grid_*)
 * and, through the result log's `variant` column and bench:<name> rows,
 * tools/ all take their list of implementations from here. */
#ifndef LAYER_VARIANTS_H
#define LAYER_VARIANTS_H

#include "shape.h"
#include "../kernels/kdn.h"
#include "deltanet_data.h"

/* Enqueues one layer call c (the library's layer call, kdn.h; the tests
 * build theirs with kdn_layer_contiguous) with the variant's scratch. */
typedef void (*LayerRun)(void *scratch, const KdnLayerCall *c);

typedef struct {
    const char *name;  /* the log's variant column and --bench label */
    const char *what;  /* what it is, in a line */
    const char *entry; /* its entry points */
    /* allocates its scratch outside any timed region (NULL: it needs none) */
    void *(*prepare)(Ctx *c, const KdnShape *s);
    LayerRun run; /* enqueues one layer call */
    /* The shapes it documents refusing, and why (NULL: it takes s). A refused
     * call launches nothing and writes nothing; kdn_sync() names the kernel. */
    const char *(*refuses)(const KdnShape *s);
} LayerVariant;

/* X(id, name, tol): every variant, in the order the comparison rows run them
 * (the first is the --bench speed-up baseline), and the tolerance class
 * (phases/phases.h) of its grid row. */
#define LAYER_VARIANTS(X)                                 \
    X(UNFUSED, unfused, TOL_CHUNK)                        \
    X(RECURRENT, recurrent, TOL_CHUNK)                    \
    X(CHUNKED, chunked, TOL_CHUNK)                  \
    X(AUTO, auto, TOL_CHUNK)

#define LAYER_VARIANT_ID(id, name, tol) LAYER_##id,
enum { LAYER_VARIANTS(LAYER_VARIANT_ID) LAYER_VARIANT_COUNT };
#undef LAYER_VARIANT_ID

extern const LayerVariant layer_variants[LAYER_VARIANT_COUNT];
/* The variant called `name`, or NULL. */
const LayerVariant *layer_variant(const char *name);

/* Runs v on a shape it refuses: the call must be refused (kdn_sync() says
 * "refused", naming the kernel) and write no element of o (all NaN still).
 * Fails the test otherwise, saying which. d, dd: the case's inputs. */
void expect_refused(Ctx *c, const LayerVariant *v, const KdnShape *s, const DnDevice *dd, size_t n_o, Tol tol);
/* A --set shape v does not take: the test is skipped, saying so, and true
 * returned. Run, kdn_layer_run would hand it to the recurrent kernel, and a
 * chunked row would pass having checked another kernel. */
bool layer_variant_refuses(Ctx *c, const LayerVariant *v, const Shape *sh);

#endif
