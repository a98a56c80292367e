/* Full-precision logits of a model on a fixed token sequence (tools/e2e/e2e_kl.c compares two such dumps).
 *
 *   e2e_logits MODEL.gguf UBATCH NTOK OUT.f32   one prompt of NTOK pseudo-random tokens (fixed seed) in one
 *                                               llama_decode with n_ubatch = UBATCH, every position's logits;
 *                                               OUT = int32 NTOK, int32 n_vocab, then NTOK x n_vocab float32
 *
 * Built by tools/e2e/e2e_bench.sh against the llama.cpp it benchmarks (llama.h's C API). Exit status: 0 written,
 * 1 a failure (load, decode, I/O), 2 bad usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

enum { TOKEN_SEED = 20260822 };

static int fail(const char *what) {
    fprintf(stderr, "e2e_logits: %s\n", what);
    return 1;
}

/* xorshift64: the same token sequence on every machine and every run */
static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int write_dump(const char *path, int32_t n_tok, int32_t n_vocab, const float *logits) {
    FILE *f = fopen(path, "wb");
    if (!f) return fail("cannot create the dump file");
    const size_t n = (size_t)n_tok * (size_t)n_vocab;
    const int ok = fwrite(&n_tok, sizeof n_tok, 1, f) == 1 && fwrite(&n_vocab, sizeof n_vocab, 1, f) == 1 &&
                   fwrite(logits, sizeof *logits, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : fail("short write of the dump file");
}

static int dump(const char *model_path, int n_ubatch, int n_tok, const char *out_path) {
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = -1; /* every layer on the GPU */
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) return fail("cannot load the model");

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_tok;
    cp.n_batch = (uint32_t)n_tok;
    cp.n_ubatch = (uint32_t)n_ubatch;
    cp.n_seq_max = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return fail("cannot create the context");

    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_batch batch = llama_batch_init(n_tok, 0, 1);
    uint64_t s = TOKEN_SEED;
    for (int i = 0; i < n_tok; ++i) {
        batch.token[i] = (llama_token)(next_random(&s) % (uint64_t)n_vocab);
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n_tok;
    int rc = llama_decode(ctx, batch) == 0 ? 0 : fail("llama_decode failed");
    if (rc == 0) rc = write_dump(out_path, n_tok, n_vocab, llama_get_logits(ctx));
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return rc;
}

int main(int argc, char **argv) {
    const int n_ubatch = argc == 5 ? atoi(argv[2]) : 0, n_tok = argc == 5 ? atoi(argv[3]) : 0;
    if (n_ubatch <= 0 || n_tok <= 0) {
        fprintf(stderr, "usage: e2e_logits MODEL.gguf UBATCH NTOK OUT.f32\n");
        return 2;
    }
    return dump(argv[1], n_ubatch, n_tok, argv[4]);
}
