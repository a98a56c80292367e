/* The Delta-Net layer's inputs as files (deltanet_files.h). */
#include "deltanet_files.h"

#include "../harness/tensors.h"

#include <stdio.h>
#include <string.h>

const char *const layer_inputs[6] = {"q", "k", "v", "g", "beta", "state"};

int layer_tensor_shape(const Shape *sh, const char *tensor, size_t *shape) {
    size_t B = (size_t)sh->n_seqs, T = (size_t)sh->T, Hk = (size_t)sh->H_k, Hv = (size_t)sh->H_v;
    size_t Dk = (size_t)sh->D_k, Dv = (size_t)sh->D_v;
    size_t qk[4] = {B, T, Hk, Dk}, v[4] = {B, T, Hv, Dv}, gb[3] = {B, T, Hv}, st[4] = {B, Hv, Dv, Dk};
    const size_t *src = st;
    int ndim = 4;
    if (strcmp(tensor, "q") == 0 || strcmp(tensor, "k") == 0)
        src = qk;
    else if (strcmp(tensor, "v") == 0)
        src = v;
    else if (strcmp(tensor, "g") == 0 || strcmp(tensor, "beta") == 0)
        src = gb, ndim = 3;
    memcpy(shape, src, (size_t)ndim * sizeof *shape);
    return ndim;
}

/* The six headers, each of its tensor's rank and of dimensions in range. */
static int read_headers(const char *dir, const char *test, NpyHeader h[6], char *err, size_t size) {
    char path[4096], why[4300];
    for (int i = 0; i < 6; i++) {
        if (tensor_path(dir, test, layer_inputs[i], path, sizeof path, err, size) != 0) return -1;
        if (npy_read_header(path, &h[i], why, sizeof why) != 0) return tensor_error(err, size, "--load: %s", why);
        int want = i == 3 || i == 4 ? 3 : 4;
        if (h[i].ndim != want)
            return tensor_error(err, size, "--load: %s has %d dimensions, %s has %d (docs/bench.md)", path, h[i].ndim,
                        layer_inputs[i], want);
        for (int d = 0; d < want; d++)
            if (h[i].shape[d] == 0 || h[i].shape[d] > 65535 * 16)
                return tensor_error(err, size, "--load: %s: dimension %d is %zu", path, d, h[i].shape[d]);
    }
    return 0;
}

int layer_shape_from_files(const char *dir, const char *test, Shape *sh, char *err, size_t size) {
    NpyHeader h[6];
    if (read_headers(dir, test, h, err, size) != 0) return -1;
    Shape s = *sh;
    s.n_seqs = (int)h[0].shape[0], s.T = (int)h[0].shape[1], s.H_k = (int)h[0].shape[2], s.D_k = (int)h[0].shape[3];
    s.H_v = (int)h[2].shape[2], s.D_v = (int)h[2].shape[3];
    for (int i = 0; i < 6; i++) {
        size_t want[4];
        int nd = layer_tensor_shape(&s, layer_inputs[i], want);
        if (memcmp(want, h[i].shape, (size_t)nd * sizeof want[0]) != 0) {
            char got[128], exp[128], path[4096];
            shape_tuple(nd, h[i].shape, got, sizeof got);
            shape_tuple(nd, want, exp, sizeof exp);
            tensor_path(dir, test, layer_inputs[i], path, sizeof path, err, size);
            return tensor_error(err, size, "--load: %s has shape %s; with q %s and v as given it must be %s", path, got,
                        "(n_seqs, T, H_k, D_k)", exp);
        }
    }
    if (s.H_v % s.H_k != 0)
        return tensor_error(err, size, "--load: H_v = %d (v) is not a multiple of H_k = %d (q)", s.H_v, s.H_k);
    *sh = s;
    return 0;
}
