/* The suite the program passes in (registry_use): its tables of tests in
 * run order (a phase may have more than one table), its --set keys and its
 * renames. */
#include "internal.h"

#include <string.h>

static const Suite *suite;
static const TestList *const *tables;
static int n_tables;

void registry_use(const Suite *s) {
    suite = s;
    tables = s->tables;
    n_tables = s->n_tables;
}

const Suite *registry_suite(void) { return suite; }

int registry_count(void) {
    int n = 0;
    for (int p = 0; p < n_tables; p++) n += tables[p]->count;
    return n;
}

const Test *registry_get(int i) {
    for (int p = 0; p < n_tables; p++) {
        if (i < tables[p]->count) return &tables[p]->tests[i];
        i -= tables[p]->count;
    }
    return NULL;
}

int edit_distance(const char *a, const char *b) {
    int lb = (int)strlen(b), row[64 + 1];
    if (lb > 64) lb = 64;
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; a[i - 1]; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

int registry_suggest(const char *name, const char **out, int n) {
    int dist[8], found = 0;
    if (n > 8) n = 8;
    for (int i = 0; i < registry_count(); i++) {
        const char *cand = registry_get(i)->name;
        int d = edit_distance(name, cand);
        bool dup = false;
        for (int k = 0; k < found; k++) dup |= strcmp(out[k], cand) == 0;
        if (dup || d > (int)strlen(cand) / 2 + 2) continue;
        int k = found < n ? found++ : n;
        if (k == n && d >= dist[n - 1]) continue;
        if (k == n) k = n - 1;
        while (k > 0 && dist[k - 1] > d) {
            out[k] = out[k - 1];
            dist[k] = dist[k - 1];
            k--;
        }
        out[k] = cand;
        dist[k] = d;
    }
    return found;
}

static const TestList *table_of(const Test *row) {
    for (int p = 0; p < n_tables; p++)
        if (row >= tables[p]->tests && row < tables[p]->tests + tables[p]->count) return tables[p];
    return NULL;
}

bool registry_least_work(const Test *row, const Test *shaped, Work *w) {
    const TestList *table = table_of(row);
    if (!table || !table->least_work) return false;
    *w = table->least_work(shaped);
    return true;
}

int registry_shape_from_files(const Test *row, const char *dir, TestCase *sh, char *err, size_t size) {
    const TestList *table = table_of(row);
    return table && table->shape_from_files ? table->shape_from_files(dir, row->name, sh, err, size) : 0;
}

bool registry_reshapes(const Test *row) {
    const TestList *table = table_of(row);
    return suite->takes_set && suite->takes_set(row->shape) && !(table && table->fixed_shapes);
}

/* The suite's renames, looked up by either name (a handful: a linear scan). */
const char *registry_former_name(const char *name) {
    for (int i = 0; suite && i < suite->n_renames; i++)
        if (strcmp(suite->renames[i].current, name) == 0) return suite->renames[i].former;
    return name;
}

const char *registry_current_name(const char *name) {
    for (int i = 0; suite && i < suite->n_renames; i++)
        if (strcmp(suite->renames[i].former, name) == 0) return suite->renames[i].current;
    return name;
}
