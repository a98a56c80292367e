/* libkdn's tuning (docs/api.md, "Tuning"): files read whole or refused with
 * their named status (and *t untouched), written and read back, and a
 * call's tuning steering the dispatch (the crossover per batch, the chunk of
 * chunk = 0 calls) or, when it is not a valid tuning, refusing the call
 * before any launch. CPU build; make check and make test run it. */
#define _POSIX_C_SOURCE 200809L
#include "../kernels/backend/runtime.h"
#include "../kernels/gated_delta_net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_PROGRAM "test_tuning"
#include "check.h"

static char dir[] = "/tmp/kdn_tuning_XXXXXX";

static const char *file_with(const char *name, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        printf("test_tuning: cannot write %s\n", path);
        exit(1);
    }
    return path;
}

/* This build's backend and device, as a file's records. */
static char head[512];
static void make_head(void) {
    char device[KDN_TUNING_NAME];
    kdn_current_device_name(device, sizeof device);
    snprintf(head, sizeof head, "kdn-tuning\t1\nbackend\t%s\ndevice\t%s\n", kdn_gdn_backend(), device);
}

/* The status of loading head + rest, and that a refusal left *t alone. */
static kdn_status load_text(const char *rest) {
    char text[2048];
    snprintf(text, sizeof text, "%s%s", head, rest);
    kdn_tuning t, before;
    memset(&t, 0xab, sizeof t);
    before = t;
    kdn_status st = kdn_tuning_load(file_with("t.tsv", text), &t);
    if (st != KDN_OK) CHECK(memcmp(&t, &before, sizeof t) == 0);
    return st;
}

static void test_good_file(void) {
    char text[1024];
    snprintf(text, sizeof text, "%s# measured here\nchunk\t32\ncrossover\t1\t96\ncrossover\t4\t16\n", head);
    kdn_tuning t;
    CHECK(kdn_tuning_load(file_with("good.tsv", text), &t) == KDN_OK);
    CHECK(t.version == KDN_TUNING_VERSION && t.chunk == 32 && t.n_rows == 2);
    CHECK(t.rows[0].n_seqs == 1 && t.rows[0].max_t == 96 && t.rows[1].n_seqs == 4 && t.rows[1].max_t == 16);
    CHECK(strcmp(t.backend, kdn_gdn_backend()) == 0);
    CHECK(kdn_tuning_recurrent_max_t(&t, 1) == 96 && kdn_tuning_recurrent_max_t(&t, 2) == 16 &&
          kdn_tuning_recurrent_max_t(&t, 100) == 16);
    CHECK(kdn_tuning_recurrent_max_t(NULL, 1) == kdn_gdn_recurrent_max_t(1));
}

static void test_refused_files(void) {
    static const char *const malformed[] = {
        "",                                                     /* no chunk, no rows */
        "chunk\t64\n",                                          /* no rows */
        "chunk\t64\ncrossover\t1\t96",                          /* cut short: no final newline */
        "chunk\t64\ncrossover\t1\t96\nchunk\t32\n",             /* chunk twice */
        "chunk\t16\ncrossover\t1\t96\n",                        /* not a chunk size */
        "chunk\t64\ncrossover\t0\t96\n",                        /* n_seqs 0 */
        "chunk\t64\ncrossover\t1\t-1\n",                        /* max_t < 0 */
        "chunk\t64\ncrossover\t4\t96\ncrossover\t1\t16\n",      /* rows out of order */
        "chunk\t64\ncrossover\t1\t96\ncrossover\t1\t16\n",      /* a batch twice */
        "chunk\t64\ncrossover\t1\t9x\n",                        /* not a number */
        "chunk\t64\ncrossover\t1\t 96\n",                       /* a space */
        "chunk\t64\ncrossover\t1\t96\t7\n",                     /* a field too many */
        "chunk\t64\ncrossover\t1\n",                            /* a field short */
        "chunk\t64\nthreshold\t1\t96\n",                        /* unknown record */
        "chunk\t64\ncrossover\t1\t96\n\n",                      /* an empty line */
        "chunk\t64\ndevice\tother\ncrossover\t1\t96\n",         /* device twice */
        "chunk\t64\ncrossover\t1\t1\ncrossover\t2\t1\ncrossover\t3\t1\ncrossover\t4\t1\ncrossover\t5\t1\n"
        "crossover\t6\t1\ncrossover\t7\t1\ncrossover\t8\t1\ncrossover\t9\t1\n", /* more rows than KDN_TUNING_MAX_ROWS */
    };
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        kdn_status st = load_text(malformed[i]);
        if (st != KDN_ERR_TUNING_MALFORMED) printf("test_tuning: malformed file %zu: status %d\n", i, (int)st);
        CHECK(st == KDN_ERR_TUNING_MALFORMED);
    }
    kdn_tuning t;
    CHECK(kdn_tuning_load(file_with("magic.tsv", "kdn-tunings\t1\n"), &t) == KDN_ERR_TUNING_MALFORMED);
    CHECK(kdn_tuning_load(file_with("bin.tsv", "\x7f" "ELF\x02\x01\x01"), &t) == KDN_ERR_TUNING_MALFORMED);
    CHECK(kdn_tuning_load(file_with("v2.tsv", "kdn-tuning\t2\nanything\n"), &t) == KDN_ERR_TUNING_VERSION);
    char text[1024];
    const char *other = strcmp(kdn_gdn_backend(), "hip") == 0 ? "cuda" : "hip";
    snprintf(text, sizeof text, "kdn-tuning\t1\nbackend\t%s\ndevice\tcpu-simt-executor\nchunk\t64\ncrossover\t1\t9\n", other);
    CHECK(kdn_tuning_load(file_with("backend.tsv", text), &t) == KDN_ERR_TUNING_DEVICE);
    snprintf(text, sizeof text, "kdn-tuning\t1\nbackend\t%s\ndevice\tAMD Instinct MI50\nchunk\t64\ncrossover\t1\t9\n",
             kdn_gdn_backend());
    CHECK(kdn_tuning_load(file_with("device.tsv", text), &t) == KDN_ERR_TUNING_DEVICE);
    CHECK(kdn_tuning_load("/nonexistent/kdn.tsv", &t) == KDN_ERR_TUNING_FILE);
    CHECK(kdn_tuning_load(dir, &t) == KDN_ERR_TUNING_FILE); /* opens, but reading a directory fails */
    CHECK(kdn_tuning_load(NULL, &t) == KDN_ERR_NULL_POINTER);
    for (int st = KDN_ERR_TUNING_FILE; st <= KDN_ERR_TUNING_DEVICE; st++)
        CHECK(strcmp(kdn_status_message((kdn_status)st), "unknown status") != 0);
}

static void test_save(void) {
    kdn_tuning t, back;
    kdn_tuning_defaults(&t);
    char path[256];
    snprintf(path, sizeof path, "%s/saved.tsv", dir);
    CHECK(kdn_tuning_save(path, &t) == KDN_ERR_TUNING_MALFORMED); /* the defaults name no device */
    kdn_current_device_name(t.device, sizeof t.device);
    t.chunk = 32;
    t.n_rows = 3;
    t.rows[2] = (kdn_crossover){9, 5};
    CHECK(kdn_tuning_save(path, &t) == KDN_OK);
    CHECK(kdn_tuning_load(path, &back) == KDN_OK);
    CHECK(memcmp(&t, &back, sizeof t) == 0);
    CHECK(kdn_tuning_save("/nonexistent/kdn.tsv", &t) == KDN_ERR_TUNING_FILE);
    CHECK(kdn_tuning_save(dir, &t) == KDN_ERR_TUNING_FILE); /* written, but not renamed over a directory */
    static char long_path[8192];
    memset(long_path, 'a', sizeof long_path - 1);
    CHECK(kdn_tuning_save(long_path, &t) == KDN_ERR_TUNING_FILE);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "! ls -d %s.* %s/saved.tsv.* 2>/dev/null | grep -q .", dir, dir);
    CHECK(system(cmd) == 0); /* no temporary file left behind */
    t.rows[2].n_seqs = 2; /* out of order */
    CHECK(kdn_tuning_save(path, &t) == KDN_ERR_TUNING_MALFORMED);
    CHECK(kdn_tuning_load(path, &back) == KDN_OK); /* the file as it was */
}

/* ---- a call's tuning ------------------------------------------------------ */
enum { S = 16, H_K = 1, H_V = 2 };

typedef struct {
    float *in[6], *dst;
    size_t n_dst;
    kdn_gdn_call call;
} Call;

static kdn_tensor view(const float *data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    kdn_tensor t = {data, {n0, n1, n2, n3}, {4, 4 * (size_t)n0, 4 * (size_t)(n0 * n1), 4 * (size_t)(n0 * n1 * n2)}};
    return t;
}

/* A call of B sequences of T tokens on finite inputs (decay mild). */
static void call_make(Call *c, int T, int B) {
    const size_t tok = (size_t)T * B, n[6] = {S * H_K * tok, S * H_K * tok, S * H_V * tok, H_V * tok, H_V * tok,
                                              (size_t)S * S * H_V * B};
    unsigned x = 7;
    for (int i = 0; i < 6; i++) {
        c->in[i] = malloc(n[i] * sizeof(float));
        for (size_t j = 0; j < n[i]; j++) {
            x = x * 1664525u + 1013904223u;
            float u = (float)(x >> 8) / 16777216.0f;
            c->in[i][j] = i == 3 ? -0.05f - 0.1f * u : i == 4 ? 0.5f * u : 0.2f * u - 0.1f;
        }
    }
    c->n_dst = n[2] + n[5];
    c->dst = malloc(c->n_dst * sizeof(float));
    memset(c->dst, 0, c->n_dst * sizeof(float));
    kdn_gdn_call k = {view(c->in[0], S, H_K, T, B), view(c->in[1], S, H_K, T, B), view(c->in[2], S, H_V, T, B),
                      view(c->in[3], 1, H_V, T, B), view(c->in[4], 1, H_V, T, B), view(c->in[5], S, S, H_V, B),
                      c->dst, 1, KDN_HEAD_MAP_TILED, KDN_PATH_AUTO, 0, NULL, NULL, 0, NULL};
    c->call = k;
}

static void call_free(Call *c) {
    for (int i = 0; i < 6; i++) free(c->in[i]);
    free(c->dst);
}

static kdn_path chosen(const kdn_gdn_call *call) {
    kdn_path p = (kdn_path)-1;
    CHECK(kdn_gdn_chosen_path(call, &p) == KDN_OK);
    return p;
}

static size_t workspace(const kdn_gdn_call *call) {
    size_t bytes = 0;
    CHECK(kdn_gdn_workspace_size(call, &bytes) == KDN_OK);
    return bytes;
}

/* A tuning of this build: recurrent up to max_1 at B = 1, max_4 from B = 2. */
static kdn_tuning tuned(int chunk, int max_1, int max_4) {
    kdn_tuning t;
    kdn_tuning_defaults(&t);
    t.chunk = chunk;
    t.n_rows = 2;
    t.rows[0] = (kdn_crossover){1, max_1};
    t.rows[1] = (kdn_crossover){4, max_4};
    return t;
}

static void test_dispatch(void) {
    const int T = 40; /* under every built-in threshold at B = 1 */
    Call c;
    call_make(&c, T, 1);
    CHECK(kdn_gdn_recurrent_max_t(1) >= T && chosen(&c.call) == KDN_PATH_RECURRENT);
    kdn_tuning t = tuned(0, T - 1, 0);
    c.call.tuning = &t;
    CHECK(chosen(&c.call) == KDN_PATH_CHUNKED);
    t.rows[0].max_t = T;
    CHECK(chosen(&c.call) == KDN_PATH_RECURRENT);
    call_free(&c);
    call_make(&c, 8, 2); /* B = 2 takes the B = 4 row */
    t = tuned(0, 1000, 7);
    c.call.tuning = &t;
    CHECK(chosen(&c.call) == KDN_PATH_CHUNKED);
    t.rows[1].max_t = 8;
    CHECK(chosen(&c.call) == KDN_PATH_RECURRENT);
    /* the chunk of chunk = 0 calls: the tuning's, as an explicit chunk would be */
    for (int chunk = 32; chunk <= 64; chunk += 32) {
        t = tuned(chunk, 0, 0);
        c.call.tuning = &t;
        size_t tuned_bytes = workspace(&c.call);
        c.call.tuning = NULL;
        c.call.path = KDN_PATH_CHUNKED;
        c.call.chunk = chunk;
        CHECK(tuned_bytes > 0 && tuned_bytes == workspace(&c.call));
        c.call.path = KDN_PATH_AUTO;
        c.call.chunk = 0;
    }
    t = tuned(32, 0, 0);
    c.call.tuning = &t;
    size_t bytes32 = workspace(&c.call);
    t.chunk = 64;
    CHECK(workspace(&c.call) != bytes32);
    call_free(&c);
}

/* A tuned call runs, and computes what the untuned call on its path does. */
static void test_tuned_call_runs(void) {
    Call a, b;
    call_make(&a, 70, 1);
    call_make(&b, 70, 1);
    kdn_tuning t = tuned(32, 16, 16);
    a.call.tuning = &t;
    b.call.path = KDN_PATH_CHUNKED;
    b.call.chunk = 32;
    size_t bytes = workspace(&a.call);
    void *ws = malloc(bytes);
    CHECK(kdn_gated_delta_net(&a.call, ws, bytes) == KDN_OK);
    CHECK(kdn_gated_delta_net(&b.call, ws, bytes) == KDN_OK);
    CHECK(memcmp(a.dst, b.dst, a.n_dst * sizeof(float)) == 0);
    free(ws);
    call_free(&a);
    call_free(&b);
}

/* A call whose tuning is not valid is refused with its status: nothing launched, dst untouched. */
static void test_bad_tuning_refused(void) {
    Call c;
    call_make(&c, 70, 1);
    kdn_tuning t;
    struct {
        const char *what;
        kdn_status want;
    } cases[] = {{"version", KDN_ERR_TUNING_VERSION}, {"backend", KDN_ERR_TUNING_DEVICE}, {"rows", KDN_ERR_TUNING_MALFORMED},
                 {"order", KDN_ERR_TUNING_MALFORMED}, {"chunk", KDN_ERR_TUNING_MALFORMED}, {"max_t", KDN_ERR_TUNING_MALFORMED},
                 {"unterminated", KDN_ERR_TUNING_MALFORMED}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        t = tuned(0, 100, 10);
        const char *w = cases[i].what;
        if (!strcmp(w, "version")) t.version = 0;
        if (!strcmp(w, "backend")) strcpy(t.backend, strcmp(kdn_gdn_backend(), "hip") ? "hip" : "cuda");
        if (!strcmp(w, "rows")) t.n_rows = KDN_TUNING_MAX_ROWS + 1;
        if (!strcmp(w, "order")) t.rows[1].n_seqs = 1;
        if (!strcmp(w, "chunk")) t.chunk = 48;
        if (!strcmp(w, "max_t")) t.rows[0].max_t = -1;
        if (!strcmp(w, "unterminated")) memset(t.device, 'x', sizeof t.device);
        c.call.tuning = &t;
        long launches = kdn_launch_count();
        size_t bytes = 1;
        kdn_path p;
        CHECK(kdn_gdn_workspace_size(&c.call, &bytes) == cases[i].want && bytes == 0);
        CHECK(kdn_gdn_chosen_path(&c.call, &p) == cases[i].want);
        char ws[64];
        kdn_status st = kdn_gated_delta_net(&c.call, ws, sizeof ws);
        if (st != cases[i].want) printf("test_tuning: tuning with a bad %s: status %d\n", w, (int)st);
        CHECK(st == cases[i].want && kdn_launch_count() == launches);
        for (size_t j = 0; j < c.n_dst; j++)
            if (c.dst[j] != 0) {
                CHECK(!"a refused call wrote dst");
                break;
            }
    }
    call_free(&c);
}

int main(void) {
    char msg[256];
    if (kdn_init(msg, sizeof msg) != 0 || !mkdtemp(dir)) {
        printf("test_tuning: no device or no temporary directory\n");
        return 77;
    }
    make_head();
    test_good_file();
    test_refused_files();
    test_save();
    test_dispatch();
    test_tuned_call_runs();
    test_bad_tuning_refused();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("test_tuning: %s left behind\n", dir);
    printf("test_tuning: %s\n", failures ? "FAILED" : "tuning files, their refusals and a call's tuning checked");
    return failures ? 1 : 0;
}
