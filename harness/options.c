/* Command-line options. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include "tensors.h"

#include <errno.h>
#include <stddef.h>
#include <fnmatch.h>
#include <limits.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int fail_usage(char *err, size_t size, const char *fmt, const char *arg) {
    snprintf(err, size, fmt, arg);
    return 2;
}

/* --load feeds the last phase's tests only. */
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

/* --max-mem: bytes, or a number with K, M or G (2^10, 2^20, 2^30). */
static bool parse_size(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    static const char units[] = "KMG";
    const char *u = *end ? strchr(units, *end) : NULL;
    if (u && end[1] == 0) v *= (double)(1ull << (10 * (u - units + 1))), end++;
    if (errno || end == s || *end || !(v >= 1.0) || v > 1e18) return false;
    *out = v;
    return true;
}

/* "3", "1,4,8" or "2-5" (and combinations); any length, no empty item. */
static int parse_phases(const char *arg, Options *o, char *err, size_t size) {
    const char *p = arg;
    do {
        size_t len = strcspn(p, ",");
        char item[16];
        long a, b;
        bool ok = len > 0 && len < sizeof item;
        if (ok) {
            memcpy(item, p, len), item[len] = 0;
            char *dash = strchr(item, '-');
            if (dash) *dash = 0;
            ok = parse_whole(item, 1, MAX_PHASE, &a) && parse_whole(dash ? dash + 1 : item, 1, MAX_PHASE, &b) && a <= b;
        }
        if (!ok)
            return fail_usage(err, size, "invalid phase '%s': phases are 1 to 8 (e.g. --phase 3, --phase 1,4, --phase 2-5)", arg);
        for (long q = a; q <= b; q++) o->phase_selected[q] = true;
        o->any_phase = true;
        p += len;
    } while (*p++ == ',');
    return 0;
}

/* A --test pattern names a test by its name or by its former one (a rename
 * of the suite's: old command lines keep working, docs/ci.md). */
static bool pattern_names(const char *pat, const Test *t) {
    return fnmatch(pat, t->name, 0) == 0 || fnmatch(pat, registry_former_name(t->name), 0) == 0;
}

/* A pattern that names tests by their former names only says what they are
 * called now (the first of them and how many). */
static void note_former_names(const char *pat) {
    const char *first = NULL;
    int n = 0;
    for (int i = 0; i < registry_count(); i++) {
        const Test *t = registry_get(i);
        if (fnmatch(pat, t->name, 0) == 0) return;
        if (pattern_names(pat, t) && n++ == 0) first = t->name;
    }
    if (n > 0)
        fprintf(stderr, "%s: note: --test %s names %d test%s by a former name, now %s%s\n", registry_suite()->program, pat,
                n, n > 1 ? "s" : "", first, n > 1 ? ", ..." : "");
}

static int check_pattern(const char *pat, char *err, size_t size) {
    for (int i = 0; i < registry_count(); i++)
        if (pattern_names(pat, registry_get(i))) return note_former_names(pat), 0;
    const char *near[3];
    int n = registry_suggest(pat, near, 3);
    int w = snprintf(err, size, "unknown test '%s'", pat);
    for (int i = 0; i < n && w > 0 && (size_t)w < size; i++)
        w += snprintf(err + w, size - (size_t)w, "%s%s", i ? ", " : "; did you mean: ", near[i]);
    if (w > 0 && (size_t)w < size) snprintf(err + w, size - (size_t)w, " (--list shows all)");
    return 2;
}

static const struct option longopts[] = {
    {"list", no_argument, 0, 'l'},      {"phase", required_argument, 0, 'p'},
    {"test", required_argument, 0, 't'}, {"seed", required_argument, 0, 's'},
    {"verbose", no_argument, 0, 'v'},    {"help", no_argument, 0, 'h'},
    {"env", no_argument, 0, 'e'},      {"bench", no_argument, 0, 'b'},
    {"reps", required_argument, 0, 'r'},  {"log", required_argument, 0, 'L'},
    {"junit", required_argument, 0, 'J'}, {"compare", required_argument, 0, 'C'},
    {"max-diff-growth", required_argument, 0, 'G'}, {"time-threshold", required_argument, 0, 'T'},
    {"set", required_argument, 0, 'S'},   {"dump", required_argument, 0, 'D'},
    {"load", required_argument, 0, 'O'},  {"max-mem", required_argument, 0, 'M'},
    {"max-seconds", required_argument, 0, 'X'},
    {0, 0, 0, 0},
};

/* "--NAME" of an option's code. */
static const char *option_name(int code) {
    for (const struct option *p = longopts; p->name; p++)
        if (p->val == code) return p->name;
    return "?";
}

/* An option getopt did not take: a prefix of several ("--s": --seed, --set)
 * is ambiguous, anything else unknown. A short option is named by itself,
 * also inside a cluster ("-xv": '-x'), where arg is not the option's word. */
static int bad_option(const char *arg, int short_opt, char *err, size_t size) {
    if (strncmp(arg, "--", 2) != 0 && short_opt) {
        char name[3] = {'-', (char)short_opt, 0};
        return fail_usage(err, size, "unknown option '%s' (--help lists the options)", name);
    }
    size_t len = strncmp(arg, "--", 2) == 0 ? strcspn(arg + 2, "=") : 0;
    char names[256] = "";
    int n = 0;
    for (const struct option *p = longopts; len && p->name; p++)
        if (strncmp(p->name, arg + 2, len) == 0) {
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s--%s", n++ ? ", " : "", p->name);
        }
    if (n > 1) return snprintf(err, size, "ambiguous option '%s': it could be %s", arg, names), 2;
    const char *near = NULL;
    char typed[64];
    snprintf(typed, sizeof typed, "%.*s", (int)len, arg + 2);
    for (const struct option *p = longopts; len && p->name; p++)
        if (edit_distance(typed, p->name) <= (int)strlen(p->name) / 3 + 1) near = near ? near : p->name;
    if (near) return snprintf(err, size, "unknown option '%s'; did you mean --%s? (--help lists the options)", arg, near), 2;
    return fail_usage(err, size, "unknown option '%s' (--help lists the options)", arg);
}

/* Options that would do nothing: each is a usage error, not silence. */
static const struct {
    int opt, other;
    bool needed; /* opt needs other; otherwise other makes opt pointless */
    const char *why;
} pointless[] = {
    {'r', 'b', true, "the repetitions are --bench's"},
    {'G', 'C', true, "the growth limit is --compare's"},
    {'T', 'C', true, "the time threshold is --compare's"},
    {'S', 'O', false, "--load takes the shape from its files"},
};
/* What --compare, --env and --list ignore: every option that runs tests
 * (--list still selects with --phase and --test). */
static const struct {
    int mode;
    const char *ignores;
} modes[] = {{'C', "ptsvbrLJSDOleMX"}, {'e', "ptsvbrLJSDOlMX"}, {'l', "svbrLJSDOMX"}};

static int check_pointless(const bool *given, char *err, size_t size) {
    for (size_t i = 0; i < sizeof pointless / sizeof pointless[0]; i++)
        if (given[pointless[i].opt] && given[pointless[i].other] != pointless[i].needed)
            return snprintf(err, size, "--%s has no effect %s --%s (%s)", option_name(pointless[i].opt),
                            pointless[i].needed ? "without" : "with", option_name(pointless[i].other), pointless[i].why), 2;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
        for (const char *c = modes[m].ignores; given[modes[m].mode] && *c; c++)
            if (given[(unsigned char)*c])
                return snprintf(err, size, "--%s has no effect with --%s", option_name(*c), option_name(modes[m].mode)), 2;
    return 0;
}

/* A selection of no test is an error naming where the --test names are. */
static int check_selection(const Options *o, char *err, size_t size) {
    for (int i = 0; i < registry_count(); i++)
        if (test_selected(o, registry_get(i))) return 0;
    int w = snprintf(err, size, "--phase and --test select no test together:");
    for (int k = 0; k < o->n_patterns && w > 0 && (size_t)w < size; k++) {
        w += snprintf(err + w, size - (size_t)w, " '%s' is in phase", o->patterns[k]);
        bool seen[MAX_PHASE + 1] = {false};
        for (int i = 0; i < registry_count(); i++) {
            const Test *t = registry_get(i);
            if (!pattern_names(o->patterns[k], t) || seen[t->phase] || w < 0 || (size_t)w >= size) continue;
            seen[t->phase] = true;
            w += snprintf(err + w, size - (size_t)w, " %d", t->phase);
        }
        if (w > 0 && (size_t)w < size && k + 1 < o->n_patterns) w += snprintf(err + w, size - (size_t)w, ";");
    }
    return 2;
}

/* One option getopt_long returned (ch; optarg its value), into o (--reps
 * and --bench into *reps and *bench): 0, or the exit status of a usage error,
 * its message in err. */
static int take_option(int ch, char **argv, Options *o, int *reps, bool *bench, char *err, size_t size) {
    long v;
    switch (ch) {
    case 'l': o->list = true; break;
    case 'v': o->verbose = true; break;
    case 'h': o->help = true; break;
    case 'e': o->env = true; break;
    case 'b': *bench = true; break;
    case 'r':
        if (!parse_whole(optarg, 1, 100000, &v)) return fail_usage(err, size, "invalid --reps '%s': 1 to 100000", optarg);
        *reps = (int)v;
        break;
    case 'p': return parse_phases(optarg, o, err, size);
    case 't':
        if (o->n_patterns == MAX_PATTERNS) return fail_usage(err, size, "too many --test options (max %s)", "32");
        o->patterns[o->n_patterns++] = optarg;
        return check_pattern(optarg, err, size);
    case 's':
        if (!parse_whole(optarg, 0, MAX_SEED, &v))
            return fail_usage(err, size, "invalid seed '%s': a whole number 0 to " MAX_SEED_TEXT, optarg);
        o->seed = (uint64_t)v;
        break;
    case 'S': return parse_set(optarg, o, err, size);
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
    case 'M':
        if (!parse_size(optarg, &o->max_mem))
            return fail_usage(err, size, "invalid --max-mem '%s': bytes, or a number with K, M or G (e.g. 8G)", optarg);
        break;
    case 'X':
        if (!parse_positive(optarg, &o->max_seconds))
            return fail_usage(err, size, "invalid --max-seconds '%s': a number of seconds > 0", optarg);
        break;
    case ':': return fail_usage(err, size, "option '%s' needs a value", argv[optind - 1]);
    default: return bad_option(argv[optind - 1], optopt > 0 && optopt < 128 ? optopt : 0, err, size);
    }
    return 0;
}

int parse_options(int argc, char **argv, Options *o, char *err, size_t size) {
    memset(o, 0, sizeof *o);
    o->seed = DEFAULT_SEED;
    o->max_diff_growth = 2.0;
    o->time_threshold_pct = 10.0;
    o->max_mem = 0.0; /* the default, sized from the device by memory_limits */
    o->max_seconds = DEFAULT_MAX_SECONDS;
    optind = 1;
    opterr = 0;
    int ch, reps = DEFAULT_REPS;
    bool bench = false, given[128] = {false};
    while ((ch = getopt_long(argc, argv, ":lp:t:s:vh", longopts, NULL)) != -1) {
        if (ch > 0 && ch < 128) given[ch] = true;
        int rc = take_option(ch, argv, o, &reps, &bench, err, size);
        if (rc) return rc;
    }
    /* --compare OLD NEW: the one positional argument is NEW */
    if (o->compare_old) {
        if (optind != argc - 1) return fail_usage(err, size, "--compare needs two logs: --compare OLD NEW%s", "");
        o->compare_new = argv[optind++];
    }
    if (optind < argc) return fail_usage(err, size, "unexpected argument '%s' (--help lists the options)", argv[optind]);
    o->bench_reps = bench ? reps : 0;
    if (o->help) return 0;
    if (check_pointless(given, err, size)) return 2;
    if (o->compare_old || o->env) return 0;
    if (o->load_dir && restrict_to_phase8(o, err, size)) return 2;
    if (check_selection(o, err, size)) return 2;
    bool shaped = false; /* --set reaches the rows the suite reshapes only (registry_reshapes) */
    for (int i = 0; i < registry_count() && o->set_fields && !shaped; i++)
        shaped = test_selected(o, registry_get(i)) && registry_reshapes(registry_get(i));
    if (o->set_fields && !shaped)
        return fail_usage(err, size, "--set has no effect: no selected test has %s", registry_suite()->set_rows);
    /* an impossible shape is a usage error before anything runs */
    TestCase *room = malloc(registry_suite()->case_size);
    if (!room) return fail_usage(err, size, "out of memory%s", "");
    int rc = 0;
    for (int i = 0; i < registry_count() && !rc; i++) {
        Test t;
        if (test_selected(o, registry_get(i))) rc = apply_set(o, registry_get(i), &t, room, err, size);
    }
    free(room);
    return rc;
}

bool test_selected(const Options *o, const Test *t) {
    if (o->any_phase && !o->phase_selected[t->phase]) return false;
    if (o->n_patterns == 0) return true;
    for (int i = 0; i < o->n_patterns; i++)
        if (pattern_names(o->patterns[i], t)) return true;
    return false;
}
