/* kdn_tune: measures libkdn's dispatch constants on this device and writes
 * them as a tuning file (docs/api.md, "Tuning"); checks such a file.
 *
 *   kdn_tune [--batches 1,4] [--tokens T,T,...] [--heads H_k,H_v] [--dim D] [--snapshots K] [--reps N]
 *            [--chunk 0|32|64] FILE
 *   kdn_tune --check [--heads H_k,H_v] [--dim D] FILE
 *
 * Tuning times kdn_gated_delta_net itself, the path forced (KDN_PATH_RECURRENT
 * against KDN_PATH_CHUNKED), median of --reps runs each with the last-level
 * cache flushed first, on the calling thread's current device, for every
 * batch size and token count asked (default: Qwen3-Next's heads, 16 key and
 * 32 value heads of 128, B = 1 and 4, T from 1 to 1024; --snapshots K: calls
 * that keep K state snapshots, as MTP's do, default 1). Without --chunk
 * the chunked path's chunk size is measured first (32 against 64 at the
 * largest T and the first batch) and the crossover then measured with it;
 * --chunk 0 keeps the built-in choice per shape. A batch's max_t is the
 * largest T measured below the first T from which the chunked path is
 * faster at every larger T (0: faster at every T; the largest T: at none).
 * Lists (increasing) of at most 32 values, at most KDN_TUNING_MAX_ROWS batches.
 * Prints each measurement as a TSV row (n_seqs, T, chunk, recurrent_us,
 * chunked_us, faster) on stdout, writes FILE (kdn_tuning_save) and reads it
 * back (kdn_tuning_load).
 * --check loads FILE; on success prints chunk and, per row, n_seqs, max_t
 * and the path kdn_gdn_chosen_path takes with the tuning at T = max_t and
 * max_t + 1 (TSV). Exit status: 0; 1 a refused file (the status's message
 * on stderr) or a failed run; 2 bad usage; 77 no device. On the CPU build
 * the times are emulation: the tool runs there for its tests only. */
#include "../kernels/backend/runtime.h"
#include "../kernels/gated_delta_net.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxList = 32 };

typedef struct {
    int n, v[kMaxList];
} IntList;

typedef struct {
    IntList batches, tokens;
    int H_k, H_v, D, K, reps, chunk; /* chunk -1: measure it; K: the calls' snapshots */
    int check;
    const char *file;
} Options;

/* ---- command line ---------------------------------------------------------- */
static int parse_list(const char *s, IntList *l) {
    l->n = 0;
    for (const char *at = s; *at;) {
        char *end;
        long v = strtol(at, &end, 10);
        if (end == at || v < 1 || v > 1 << 20 || l->n == kMaxList || (*end && *end != ',')) return 0;
        if (l->n > 0 && v <= l->v[l->n - 1]) return 0; /* increasing */
        l->v[l->n++] = (int)v;
        at = *end ? end + 1 : end;
    }
    return l->n > 0;
}

static int parse_heads(const char *s, Options *o) {
    return sscanf(s, "%d,%d", &o->H_k, &o->H_v) == 2 && o->H_k >= 1 && o->H_v >= o->H_k && o->H_v % o->H_k == 0;
}

static int usage(void) {
    fprintf(stderr, "usage: kdn_tune [--check] [--batches B,B] [--tokens T,T,...] [--heads H_k,H_v] [--dim D] "
                    "[--snapshots K] [--reps N] [--chunk 0|32|64] FILE\n");
    return 2;
}

static int parse_options(int argc, char **argv, Options *o) {
    static const char defaults_T[] = "1,2,4,8,16,32,48,64,96,128,160,192,256,320,384,512,768,1024";
    *o = (Options){.H_k = 16, .H_v = 32, .D = 128, .K = 1, .reps = 10, .chunk = -1};
    parse_list("1,4", &o->batches);
    parse_list(defaults_T, &o->tokens);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--check") == 0) { o->check = 1; continue; }
        if (a[0] != '-') { if (o->file) return 0; o->file = a; continue; }
        if (!v) return 0;
        if (strcmp(a, "--batches") == 0) ok = parse_list(v, &o->batches);
        else if (strcmp(a, "--tokens") == 0) ok = parse_list(v, &o->tokens);
        else if (strcmp(a, "--heads") == 0) ok = parse_heads(v, o);
        else if (strcmp(a, "--dim") == 0) ok = sscanf(v, "%d", &o->D) == 1 && o->D >= 1 && o->D <= 128;
        else if (strcmp(a, "--snapshots") == 0) ok = sscanf(v, "%d", &o->K) == 1 && o->K >= 1 && o->K <= 64;
        else if (strcmp(a, "--reps") == 0) ok = sscanf(v, "%d", &o->reps) == 1 && o->reps >= 1;
        else if (strcmp(a, "--chunk") == 0) ok = sscanf(v, "%d", &o->chunk) == 1 && (o->chunk == 0 || o->chunk == 32 || o->chunk == 64);
        else return 0;
        if (!ok) return 0;
        i++;
    }
    return o->file != NULL && o->batches.n <= KDN_TUNING_MAX_ROWS;
}

/* ---- one shape's call on the device ---------------------------------------- */
enum { Q, K, V, G, BETA, STATE, N_IN };

typedef struct {
    kdn_gdn_call call;
    void *in[N_IN], *dst, *ws;
    size_t ws_bytes;
} Layer;

static void view(kdn_tensor *t, void *data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    int64_t ne[4] = {n0, n1, n2, n3};
    t->data = data;
    memcpy(t->ne, ne, sizeof ne);
    t->nb[0] = sizeof(float);
    for (int d = 1; d < 4; d++) t->nb[d] = t->nb[d - 1] * (size_t)ne[d - 1];
}

/* Uniform in [lo, hi), the same for every run. */
static int upload_uniform(void *to, size_t n, float lo, float hi, uint32_t seed) {
    float *h = malloc(n * sizeof(float));
    if (!h) return 0;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = lo + (hi - lo) * (float)(seed >> 8) / (float)(1u << 24);
    }
    int ok = kdn_upload(to, h, n * sizeof(float)) == 0;
    free(h);
    return ok;
}

static void layer_free(Layer *l) {
    for (int i = 0; i < N_IN; i++) kdn_free(l->in[i]);
    kdn_free(l->dst);
    kdn_free(l->ws);
    memset(l, 0, sizeof *l);
}

/* The inputs of a layer of B sequences of T tokens (q, k small, decay
 * mild), its dst and the largest workspace of its paths; 0 on failure. */
static int layer_make(Layer *l, const Options *o, int B, int T, int chunk) {
    memset(l, 0, sizeof *l);
    const size_t tok = (size_t)T * B, D = (size_t)o->D;
    const size_t n[N_IN] = {D * o->H_k * tok, D * o->H_k * tok, D * o->H_v * tok, o->H_v * tok, o->H_v * tok,
                            D * D * o->H_v * B};
    const float lo[N_IN] = {-0.1f, -0.1f, -1, -0.2f, 0.2f, 0}, hi[N_IN] = {0.1f, 0.1f, 1, -0.01f, 0.8f, 0};
    int ok = 1;
    for (int i = 0; i < N_IN && ok; i++)
        ok = (l->in[i] = kdn_malloc(n[i] * sizeof(float))) && upload_uniform(l->in[i], n[i], lo[i], hi[i], 17u * (i + 1));
    size_t dst_floats = n[V] + (size_t)o->K * n[STATE];
    ok = ok && (l->dst = kdn_malloc(dst_floats * sizeof(float)));
    if (!ok) return layer_free(l), 0;
    kdn_gdn_call *c = &l->call;
    view(&c->q, l->in[Q], o->D, o->H_k, T, B);
    view(&c->k, l->in[K], o->D, o->H_k, T, B);
    view(&c->v, l->in[V], o->D, o->H_v, T, B);
    view(&c->g, l->in[G], 1, o->H_v, T, B);
    view(&c->beta, l->in[BETA], 1, o->H_v, T, B);
    view(&c->state, l->in[STATE], o->D, o->D, o->H_v, B);
    c->dst = l->dst;
    c->K = o->K;
    c->head_map = KDN_HEAD_MAP_TILED;
    c->chunk = chunk;
    c->path = KDN_PATH_CHUNKED;
    if (kdn_gdn_workspace_size(c, &l->ws_bytes) != KDN_OK) return layer_free(l), 0;
    if (l->ws_bytes && !(l->ws = kdn_malloc(l->ws_bytes))) return layer_free(l), 0;
    return 1;
}

static void run_layer(void *arg) {
    Layer *l = arg;
    if (kdn_gated_delta_net(&l->call, l->ws, l->ws_bytes) != KDN_OK) fprintf(stderr, "kdn_tune: a call was refused\n");
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median microseconds of `reps` runs of the layer on `path`; < 0 on failure. */
static double median_us(Layer *l, kdn_path path, int reps) {
    double *us = malloc((size_t)reps * sizeof(double));
    if (!us) return -1;
    l->call.path = path;
    run_layer(l); /* warm-up */
    int ok = kdn_sync() == NULL;
    for (int r = 0; r < reps && ok; r++) {
        kdn_flush_cache();
        us[r] = 1000.0 * kdn_time_ms(run_layer, l);
        ok = us[r] >= 0 && kdn_sync() == NULL;
    }
    qsort(us, (size_t)reps, sizeof(double), by_value);
    double m = ok ? us[reps / 2] : -1;
    free(us);
    return m;
}

/* ---- tuning ---------------------------------------------------------------- */
typedef struct {
    double rec, chunked;
} Pair;

static int time_both(const Options *o, int B, int T, int chunk, Pair *p) {
    Layer l;
    if (!layer_make(&l, o, B, T, chunk)) return 0;
    p->rec = median_us(&l, KDN_PATH_RECURRENT, o->reps);
    p->chunked = median_us(&l, KDN_PATH_CHUNKED, o->reps);
    layer_free(&l);
    return p->rec >= 0 && p->chunked >= 0;
}

static void print_row(int B, int T, int chunk, const Pair *p) {
    printf("%d\t%d\t%d\t%.2f\t%.2f\t%s\n", B, T, chunk, p->rec, p->chunked, p->chunked < p->rec ? "chunked" : "recurrent");
}

/* The chunk size the chunked path runs fastest at the largest T and the
 * first batch; 0 on failure. */
static int measure_chunk(const Options *o) {
    const int T = o->tokens.v[o->tokens.n - 1], B = o->batches.v[0];
    Pair p[2];
    const int chunks[2] = {32, 64};
    for (int i = 0; i < 2; i++) {
        if (!time_both(o, B, T, chunks[i], &p[i])) return 0;
        print_row(B, T, chunks[i], &p[i]);
    }
    return p[0].chunked < p[1].chunked ? 32 : 64;
}

/* max_t of one batch from its measurements, by increasing T. */
static int crossover(const IntList *tokens, const Pair *p) {
    int first = tokens->n; /* the first index from which chunked wins at every larger T */
    while (first > 0 && p[first - 1].chunked < p[first - 1].rec) first--;
    return first == 0 ? 0 : tokens->v[first - 1];
}

static int tune(const Options *o) {
    kdn_tuning t;
    kdn_tuning_defaults(&t);
    if (kdn_current_device_name(t.device, sizeof t.device) != 0) return fprintf(stderr, "kdn_tune: no device name\n"), 1;
    printf("n_seqs\tT\tchunk\trecurrent_us\tchunked_us\tfaster\n");
    t.chunk = o->chunk >= 0 ? o->chunk : measure_chunk(o);
    if (o->chunk < 0 && t.chunk == 0) return fprintf(stderr, "kdn_tune: the chunk measurement failed\n"), 1;
    t.n_rows = o->batches.n;
    for (int b = 0; b < o->batches.n; b++) {
        Pair p[kMaxList];
        const int B = o->batches.v[b];
        for (int i = 0; i < o->tokens.n; i++) {
            if (!time_both(o, B, o->tokens.v[i], t.chunk, &p[i]))
                return fprintf(stderr, "kdn_tune: B=%d T=%d: a run failed\n", B, o->tokens.v[i]), 1;
            print_row(B, o->tokens.v[i], t.chunk, &p[i]);
        }
        t.rows[b] = (kdn_crossover){B, crossover(&o->tokens, p)};
    }
    kdn_status st = kdn_tuning_save(o->file, &t);
    kdn_tuning back;
    if (st == KDN_OK) st = kdn_tuning_load(o->file, &back);
    if (st != KDN_OK) return fprintf(stderr, "kdn_tune: %s: %s\n", o->file, kdn_status_message(st)), 1;
    fprintf(stderr, "kdn_tune: %s written for %s (%s)\n", o->file, t.device, t.backend);
    return 0;
}

/* ---- checking a file ------------------------------------------------------- */
static const char *path_at(const Options *o, const kdn_tuning *t, int B, int T) {
    if (T < 1) return "-";
    Layer l;
    if (!layer_make(&l, o, B, T, 0)) return "error";
    l.call.path = KDN_PATH_AUTO;
    l.call.tuning = t;
    kdn_path p;
    kdn_status st = kdn_gdn_chosen_path(&l.call, &p);
    layer_free(&l);
    return st != KDN_OK ? "error" : p == KDN_PATH_CHUNKED ? "chunked" : "recurrent";
}

static int check(const Options *o) {
    kdn_tuning t;
    kdn_status st = kdn_tuning_load(o->file, &t);
    if (st != KDN_OK) return fprintf(stderr, "kdn_tune: %s refused: %s\n", o->file, kdn_status_message(st)), 1;
    printf("chunk\t%d\n", t.chunk);
    printf("n_seqs\tmax_t\tpath_at_max_t\tpath_past\n");
    for (int i = 0; i < t.n_rows; i++) {
        const int B = t.rows[i].n_seqs, T = t.rows[i].max_t;
        printf("%d\t%d\t%s\t%s\n", B, T, path_at(o, &t, B, T), path_at(o, &t, B, T + 1));
    }
    return 0;
}

int main(int argc, char **argv) {
    Options o;
    if (!parse_options(argc, argv, &o)) return usage();
    char msg[256];
    if (kdn_init(msg, sizeof msg) != 0) return fprintf(stderr, "kdn_tune: no device: %s\n", msg), 77;
    return o.check ? check(&o) : tune(&o);
}
