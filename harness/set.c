/* --set KEY=VALUE: the keys are the suite's (SetKey, registry_suite); each
 * value is checked against its key's range once, when parsed, and written
 * into the case of every row the suite reshapes. */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

bool parse_whole(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* key's range as the errors say it: "1 to 4096", "32 or 64", "tiled or
 * block (or 0, 1)", with the key's note after it. */
static const char *key_range(const SetKey *k, char *buf, size_t size) {
    int w = 0;
    if (k->names) {
        for (int i = 0; k->names[i] && w >= 0 && (size_t)w < size; i++)
            w += snprintf(buf + w, size - (size_t)w, "%s%s", i ? " or " : "", k->names[i]);
        for (long v = k->lo; v <= k->hi && w >= 0 && (size_t)w < size; v++)
            w += snprintf(buf + w, size - (size_t)w, "%s%ld%s", v == k->lo ? " (or " : ", ", v, v == k->hi ? ")" : "");
    } else {
        w = snprintf(buf, size, "%ld %s %ld", k->lo, k->pair ? "or" : "to", k->hi);
    }
    if (k->note && w >= 0 && (size_t)w < size) snprintf(buf + w, size - (size_t)w, "%s", k->note);
    return buf;
}

static bool key_takes(const SetKey *k, long v) {
    return k->pair ? v == k->lo || v == k->hi : v >= k->lo && v <= k->hi;
}

/* The value of a named key: a name's index, or a whole number; -1 when it is
 * neither (the message in err), 0 when parsed (range unchecked). */
static int key_value(const SetKey *k, const char *arg, const char *val, long *v, char *err, size_t size) {
    char range[128];
    for (int i = 0; k->names && k->names[i]; i++)
        if (strcmp(val, k->names[i]) == 0) return *v = i, 0;
    if (parse_whole(val, LONG_MIN, LONG_MAX, v)) return 0;
    if (k->names)
        snprintf(err, size, "--set '%s': %s is %s, '%s' is neither", arg, k->key, key_range(k, range, sizeof range), val);
    else
        snprintf(err, size, "--set '%s': %s takes a whole number, '%s' is not one (%s is %s)", arg, k->key, val, k->key,
                 key_range(k, range, sizeof range));
    return -1;
}

/* "unknown key" with the keys there are, and the nearest first. */
static int unknown_key(const char *arg, size_t klen, char *err, size_t size) {
    const Suite *s = registry_suite();
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)klen, arg);
    const char *best = "seed";
    int best_d = edit_distance(key, "seed");
    for (int i = 0; i < s->n_set_keys; i++) {
        int d = edit_distance(key, s->set_keys[i].key);
        if (d < best_d) best = s->set_keys[i].key, best_d = d;
    }
    int w = snprintf(err, size, "--set '%s': unknown key", arg);
    if (best_d <= (int)strlen(best) / 2 + 1 && w >= 0 && (size_t)w < size)
        w += snprintf(err + w, size - (size_t)w, "; did you mean %s?", best);
    for (int i = 0; i <= s->n_set_keys && w >= 0 && (size_t)w < size; i++)
        w += snprintf(err + w, size - (size_t)w, "%s%s", i ? ", " : " (keys: ",
                      i < s->n_set_keys ? s->set_keys[i].key : "seed)");
    return 2;
}

int parse_set(const char *arg, Options *o, char *err, size_t size) {
    const char *eq = strchr(arg, '=');
    if (!eq) return snprintf(err, size, "--set '%s': expected KEY=VALUE", arg), 2;
    size_t klen = (size_t)(eq - arg);
    const char *val = eq + 1;
    long v;
    if (klen == 4 && strncmp(arg, "seed", 4) == 0) {
        if (!parse_whole(val, 0, MAX_SEED, &v))
            return snprintf(err, size, "--set '%s': seed is a whole number 0 to " MAX_SEED_TEXT, arg), 2;
        o->seed = (uint64_t)v;
        return 0;
    }
    const Suite *s = registry_suite();
    for (int i = 0; i < s->n_set_keys; i++) {
        const SetKey *k = &s->set_keys[i];
        if (strlen(k->key) != klen || strncmp(arg, k->key, klen) != 0) continue;
        char range[128];
        if (key_value(k, arg, val, &v, err, size) != 0) return 2;
        if (!key_takes(k, v))
            return snprintf(err, size, "--set '%s': %s out of range: %s is %s", arg, k->key, k->key,
                            key_range(k, range, sizeof range)), 2;
        o->set_values[i] = (int)v;
        o->set_fields |= 1u << i;
        return 0;
    }
    return unknown_key(arg, klen, err, size);
}

static int *case_field(TestCase *c, const SetKey *k) { return (int *)((char *)c + k->offset); }

/* The keys --set gave the test being run (apply_set's last call; tests run
 * one at a time). */
static unsigned given_fields;

int set_key_given(const char *key) {
    const Suite *s = registry_suite();
    for (int i = 0; i < s->n_set_keys; i++)
        if (strcmp(s->set_keys[i].key, key) == 0) return (given_fields >> i) & 1u;
    return 0;
}

int apply_set(const Options *o, const Test *t, Test *out, TestCase *room, char *err, size_t size) {
    *out = *t;
    given_fields = 0;
    if ((!o->set_fields && !o->load_dir) || !registry_reshapes(t)) return 0;
    given_fields = o->set_fields;
    const Suite *s = registry_suite();
    memcpy(room, t->shape, s->case_size);
    out->shape = room;
    for (int i = 0; i < s->n_set_keys; i++)
        if (o->set_fields & (1u << i)) *case_field(room, &s->set_keys[i]) = o->set_values[i];
    /* --load: the tensor dimensions are the files', in --set's ranges */
    if (o->load_dir && registry_shape_from_files(t, o->load_dir, room, err, size) != 0) return 2;
    for (int i = 0; o->load_dir && i < s->n_set_keys; i++) {
        const SetKey *k = &s->set_keys[i];
        long v = *case_field(room, k);
        char range[128];
        if (k->dims && !key_takes(k, v))
            return snprintf(err, size, "--load: the files give %s = %ld, out of range: %s is %s", k->key, v, k->key,
                            key_range(k, range, sizeof range)), 2;
    }
    return s->check_case ? s->check_case(t, room, err, size) : 0;
}
