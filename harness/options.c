/* Command-line options. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include "tensors.h"

#include <errno.h>
#include <stddef.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int fail_usage(char *err, size_t size, const char *fmt, const char *arg) {
    snprintf(err, size, fmt, arg);
    return 2;
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* --set keys: Shape fields with their allowed range. */
static const struct {
    const char *key;
    size_t offset;
    long lo, hi;
} set_keys[] = {
    {"T", offsetof(Shape, T), 1, 1 << 20},         {"n_seqs", offsetof(Shape, n_seqs), 1, 65535},
    {"H_k", offsetof(Shape, H_k), 1, 65535},       {"H_v", offsetof(Shape, H_v), 1, 65535},
    {"D_k", offsetof(Shape, D_k), 1, 128},         {"D_v", offsetof(Shape, D_v), 1, 4096},
    {"chunk", offsetof(Shape, chunk), 32, 64},     {"head_map", offsetof(Shape, head_map), 0, 1},
};
enum { N_SET_KEYS = sizeof set_keys / sizeof set_keys[0] };

static int *shape_field(Shape *s, int key) { return (int *)((char *)s + set_keys[key].offset); }

/* KEY=VALUE; head_map takes tiled/block, seed sets the seed. */
static int parse_set(const char *arg, Options *o, char *err, size_t size) {
    const char *eq = strchr(arg, '=');
    if (!eq) return fail_usage(err, size, "--set '%s': expected KEY=VALUE", arg);
    size_t klen = (size_t)(eq - arg);
    const char *val = eq + 1;
    long v;
    if (klen == 4 && strncmp(arg, "seed", 4) == 0) {
        if (!parse_int(val, 0, 0x7fffffffL, &v)) return fail_usage(err, size, "--set '%s': seed is a non-negative integer", arg);
        o->seed = (uint64_t)v;
        return 0;
    }
    for (int i = 0; i < N_SET_KEYS; i++) {
        if (strlen(set_keys[i].key) != klen || strncmp(arg, set_keys[i].key, klen) != 0) continue;
        bool head_map = set_keys[i].offset == offsetof(Shape, head_map);
        bool chunk = set_keys[i].offset == offsetof(Shape, chunk);
        if (head_map && (strcmp(val, "tiled") == 0 || strcmp(val, "block") == 0))
            v = strcmp(val, "block") == 0;
        else if (!parse_int(val, set_keys[i].lo, set_keys[i].hi, &v) || (chunk && v != 32 && v != 64))
            return fail_usage(err, size, "--set '%s': value out of range (T >= 1, D_k <= 128, chunk 32 or 64, "
                                         "head_map tiled or block; see --help)", arg);
        *shape_field(&o->set, i) = (int)v;
        o->set_fields |= 1u << i;
        return 0;
    }
    return fail_usage(err, size, "--set '%s': unknown key (T, n_seqs, H_k, H_v, D_k, D_v, chunk, head_map, seed)", arg);
}

int apply_set(const Options *o, const Test *t, Test *out, char *err, size_t size) {
    *out = *t;
    if ((!o->set_fields && !o->load_dir) || t->shape.chunk == 0) return 0;
    for (int i = 0; i < N_SET_KEYS; i++)
        if (o->set_fields & (1u << i)) *shape_field(&out->shape, i) = *shape_field((Shape *)&o->set, i);
    /* --load: the tensor dimensions are the files' */
    if (o->load_dir && layer_shape_from_files(o->load_dir, t->name, &out->shape, err, size) != 0) return 2;
    if (out->shape.H_k > 0 && out->shape.H_v % out->shape.H_k != 0) { /* phase 4-5 rows have no heads */
        snprintf(err, size, "--set: test %s would have H_v = %d, not a multiple of H_k = %d", t->name, out->shape.H_v,
                 out->shape.H_k);
        return 2;
    }
    return 0;
}

/* --load feeds the Delta-Net layer tests: phase 8 only. */
static int restrict_to_phase8(Options *o, char *err, size_t size) {
    for (int p = 1; p < MAX_PHASE; p++)
        if (o->phase_selected[p]) return fail_usage(err, size, "--load runs phase-8 tests only (%s)", "--phase 8");
    o->any_phase = o->phase_selected[8] = true;
    for (int i = 0; i < registry_count(); i++)
        if (test_selected(o, registry_get(i))) return 0;
    return fail_usage(err, size, "--load: no phase-8 test selected (%s)", "--test NAME");
}

static bool parse_positive(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0.0)) return false;
    *out = v;
    return true;
}

/* "3", "1,4,8" or "2-5" (and combinations). */
static int parse_phases(const char *arg, Options *o, char *err, size_t size) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(tok, '-');
        long a, b;
        if (dash) *dash = 0;
        if (!parse_int(tok, 1, MAX_PHASE, &a) || !parse_int(dash ? dash + 1 : tok, 1, MAX_PHASE, &b) || b < a)
            return fail_usage(err, size, "invalid phase '%s': phases are 1 to 8 (e.g. --phase 3, --phase 1,4, --phase 2-5)", arg);
        for (long p = a; p <= b; p++) o->phase_selected[p] = true;
        o->any_phase = true;
    }
    return 0;
}

static int check_pattern(const char *pat, char *err, size_t size) {
    for (int i = 0; i < registry_count(); i++)
        if (fnmatch(pat, registry_get(i)->name, 0) == 0) return 0;
    const char *near[3];
    int n = registry_suggest(pat, near, 3);
    int w = snprintf(err, size, "unknown test '%s'", pat);
    for (int i = 0; i < n && w > 0 && (size_t)w < size; i++)
        w += snprintf(err + w, size - (size_t)w, "%s%s", i ? ", " : "; did you mean: ", near[i]);
    if (w > 0 && (size_t)w < size) snprintf(err + w, size - (size_t)w, " (--list shows all)");
    return 2;
}

int parse_options(int argc, char **argv, Options *o, char *err, size_t size) {
    static const struct option longopts[] = {
        {"list", no_argument, 0, 'l'},      {"phase", required_argument, 0, 'p'},
        {"test", required_argument, 0, 't'}, {"seed", required_argument, 0, 's'},
        {"verbose", no_argument, 0, 'v'},    {"help", no_argument, 0, 'h'},
        {"env", no_argument, 0, 'e'},      {"bench", no_argument, 0, 'b'},
        {"reps", required_argument, 0, 'r'},  {"log", required_argument, 0, 'L'},
        {"junit", required_argument, 0, 'J'}, {"compare", required_argument, 0, 'C'},
        {"max-diff-growth", required_argument, 0, 'G'}, {"time-threshold", required_argument, 0, 'T'},
        {"set", required_argument, 0, 'S'},   {"dump", required_argument, 0, 'D'},
        {"load", required_argument, 0, 'O'},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->seed = DEFAULT_SEED;
    o->max_diff_growth = 2.0;
    o->time_threshold_pct = 10.0;
    optind = 1;
    opterr = 0;
    int ch, reps = DEFAULT_REPS;
    bool bench = false;
    while ((ch = getopt_long(argc, argv, ":lp:t:s:vh", longopts, NULL)) != -1) {
        long v;
        int rc = 0;
        switch (ch) {
        case 'l': o->list = true; break;
        case 'v': o->verbose = true; break;
        case 'h': o->help = true; break;
        case 'e': o->env = true; break;
        case 'b': bench = true; break;
        case 'r':
            if (!parse_int(optarg, 1, 100000, &v)) return fail_usage(err, size, "invalid --reps '%s': 1 to 100000", optarg);
            reps = (int)v;
            break;
        case 'p': rc = parse_phases(optarg, o, err, size); break;
        case 't':
            if (o->n_patterns == MAX_PATTERNS) return fail_usage(err, size, "too many --test options (max %s)", "32");
            o->patterns[o->n_patterns++] = optarg;
            rc = check_pattern(optarg, err, size);
            break;
        case 's':
            if (!parse_int(optarg, 0, 0x7fffffffL, &v)) return fail_usage(err, size, "invalid seed '%s': a non-negative integer", optarg);
            o->seed = (uint64_t)v;
            break;
        case 'S': rc = parse_set(optarg, o, err, size); break;
        case 'L': o->log_path = optarg; break;
        case 'J': o->junit_path = optarg; break;
        case 'D': o->dump_dir = optarg; break;
        case 'O': o->load_dir = optarg; break;
        case 'C': o->compare_old = optarg; break;
        case 'G':
            if (!parse_positive(optarg, &o->max_diff_growth) || o->max_diff_growth < 1.0)
                return fail_usage(err, size, "invalid --max-diff-growth '%s': a factor >= 1", optarg);
            break;
        case 'T':
            if (!parse_positive(optarg, &o->time_threshold_pct))
                return fail_usage(err, size, "invalid --time-threshold '%s': a percentage > 0", optarg);
            break;
        case ':': return fail_usage(err, size, "option '%s' needs a value", argv[optind - 1]);
        default: return fail_usage(err, size, "unknown option '%s' (--help lists the options)", argv[optind - 1]);
        }
        if (rc) return rc;
    }
    /* --compare OLD NEW: the one positional argument is NEW */
    if (o->compare_old) {
        if (optind != argc - 1) return fail_usage(err, size, "--compare needs two logs: --compare OLD NEW%s", "");
        o->compare_new = argv[optind++];
    }
    if (optind < argc) return fail_usage(err, size, "unexpected argument '%s' (--help lists the options)", argv[optind]);
    o->bench_reps = bench ? reps : 0;
    if (o->load_dir && restrict_to_phase8(o, err, size)) return 2;
    /* an impossible shape is a usage error before anything runs */
    for (int i = 0; i < registry_count(); i++) {
        Test t;
        if (test_selected(o, registry_get(i)) && apply_set(o, registry_get(i), &t, err, size)) return 2;
    }
    return 0;
}

bool test_selected(const Options *o, const Test *t) {
    if (o->any_phase && !o->phase_selected[t->phase]) return false;
    if (o->n_patterns == 0) return true;
    for (int i = 0; i < o->n_patterns; i++)
        if (fnmatch(o->patterns[i], t->name, 0) == 0) return true;
    return false;
}
