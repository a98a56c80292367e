/* libkdn: ggml's GATED_DELTA_NET as one library call.
 *
 *   size_t ws;  kdn_gdn_workspace_size(&call, &ws);   // bytes of device memory the call needs
 *   kdn_status st = kdn_gated_delta_net(&call, workspace, ws);
 *   if (st) fprintf(stderr, "%s\n", kdn_status_message(st));
 *
 * Semantics (ggml_gated_delta_net; docs/api.md): tensors are float32, ggml
 * order (ne[0] innermost), nb[] in bytes; every pointer is device memory of
 * the library's backend (host memory on the cpu build).
 *   q, k   [S_k, H_k, T, n_seqs]       v [S_v, H_v, T, n_seqs]     S_k == S_v
 *   g      [1,   H_v, T, n_seqs]  scalar log-decay per head and token: S *= exp(g)
 *       or [S_v, H_v, T, n_seqs]  KDA gate: state row i (key dimension i) *= exp(g[i])
 *   beta   [1,   H_v, T, n_seqs]
 *   state  [S_v, S_v, H_v, n_seqs]     S[i][j] (key row i, value column j) at i + j*S_v
 *   dst    contiguous float32: outputs [S_v, H_v, T, n_seqs], then K state
 *          snapshots [S_v, S_v, H_v, n_seqs] each, most recent first: slot 0 =
 *          state after the last token, slot s = the state s tokens before it;
 *          with T < K only slots 0..T-1 are written (the others keep their bytes).
 *          With state_dst set the snapshots go there instead (slots
 *          state_slot_stride floats apart) and dst holds the outputs only.
 * q is scaled by 1/sqrt(S_v) inside. Value head h reads key head h % H_k
 * (KDN_HEAD_MAP_TILED, ggml) or h / (H_v / H_k) (KDN_HEAD_MAP_BLOCK, HF/fla).
 * Rows (ne[0]) must be contiguous (nb[0] == 4); the other strides are free
 * (permuted views) for q, k, v, g, beta; state must be contiguous. Every
 * pointer 4-byte aligned; no tensor of 2^31 elements or more, dst below 2^33;
 * dst, state_dst and the workspace overlap nothing else (inputs may overlap
 * each other; state_dst may be the state input itself: an update in place).
 * A call that is refused returns its status, launches nothing, writes nothing.
 * The call only enqueues work on `stream`; errors of the device itself show
 * at the caller's next synchronisation. No allocation inside the call.
 * Thread safety: calls from different host threads may run at once on every
 * build (each host thread's launches and their errors are its own); a call
 * reports the failures it caused and only those (docs/api.md). */
#ifndef KDN_GATED_DELTA_NET_H
#define KDN_GATED_DELTA_NET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KDN_API_VERSION 3

/* A ggml-style view of a float32 tensor. */
typedef struct {
    const void *data;
    int64_t ne[4]; /* elements per dimension, ne[0] innermost */
    size_t nb[4];  /* bytes between consecutive elements of each dimension */
} kdn_tensor;

typedef enum {
    KDN_HEAD_MAP_TILED = 0, /* key head h % H_k (ggml, llama.cpp) */
    KDN_HEAD_MAP_BLOCK = 1  /* key head h / (H_v / H_k) (Hugging Face, flash-linear-attention) */
} kdn_head_map;

typedef enum {
    KDN_PATH_AUTO = 0,      /* the library chooses: recurrent up to the crossover (the call's tuning, else
                               kdn_gdn_recurrent_max_t(n_seqs)) tokens, else chunked */
    KDN_PATH_RECURRENT = 1, /* token-recurrent kernel (every gate shape, every K) */
    KDN_PATH_CHUNKED = 2    /* chunked form (scalar gate, K == 1 or K < T: the last K tokens
                               recurrent); other calls are routed to recurrent */
} kdn_path;

/* The dispatch's constants for one device: the chunk size of chunk = 0
 * calls and KDN_PATH_AUTO's crossover per batch size. A value of this type
 * holds either the build's built-in choices (kdn_tuning_defaults) or a
 * device's measurement (kdn_tuning_load of a file that `kdn_tune` wrote on
 * it); a call takes one through kdn_gdn_call.tuning (docs/api.md, "Tuning"). */
#define KDN_TUNING_VERSION 1
enum { KDN_TUNING_MAX_ROWS = 8, KDN_TUNING_NAME = 128 };
typedef struct {
    int n_seqs; /* batch size of the measurement */
    int max_t;  /* recurrent for T <= max_t tokens per sequence, chunked past it (>= 0) */
} kdn_crossover;
typedef struct {
    int version;                  /* KDN_TUNING_VERSION */
    char backend[8];              /* kdn_gdn_backend() of the build it is for */
    char device[KDN_TUNING_NAME]; /* the device it was measured on ("" in the built-in defaults) */
    int chunk;                    /* chunk = 0 calls: 32 or 64; 0: the built-in choice per shape */
    int n_rows;                   /* 1..KDN_TUNING_MAX_ROWS */
    kdn_crossover rows[KDN_TUNING_MAX_ROWS]; /* by strictly increasing n_seqs (>= 1) */
} kdn_tuning;

typedef struct {
    kdn_tensor q, k, v, g, beta, state;
    float *dst;             /* [S_v*H_v*T*n_seqs] outputs, then K * [S_v*S_v*H_v*n_seqs] snapshots (state_dst NULL) */
    int K;                  /* state snapshots kept, >= 1 (1: final state only) */
    kdn_head_map head_map;
    kdn_path path;
    int chunk;              /* chunked path: 32 or 64 tokens per chunk; 0: the library's default */
    void *stream;           /* hipStream_t / cudaStream_t (NULL: default stream); ignored on cpu */
    /* Where the snapshots go instead of dst's tail (e.g. llama.cpp's recurrent-state cache, so no copy
     * follows the call); NULL: dst's tail. Snapshot s is [S_v, S_v, H_v, n_seqs] contiguous at
     * state_dst + s * state_slot_stride floats; dst then holds the outputs only. state_dst may be the
     * state input itself (an update in place); otherwise it overlaps no input, dst or workspace. */
    float *state_dst;
    int64_t state_slot_stride; /* floats between state_dst's slots; 0: S_v*S_v*H_v*n_seqs (K == 1 or no
                                  state_dst: unused) */
    const kdn_tuning *tuning;  /* the dispatch's constants (API version 3); NULL: the build's built-in ones */
} kdn_gdn_call;

typedef enum {
    KDN_OK = 0,
    KDN_ERR_NULL_POINTER,      /* a call, tensor data or dst pointer is NULL */
    KDN_ERR_KEY_DIM,           /* S_k (q/k ne[0]) != S_v (v ne[0]), or q and k differ in shape */
    KDN_ERR_HEADS,             /* H_v is not a multiple of H_k */
    KDN_ERR_GATE_SHAPE,        /* g is neither [1,H_v,T,n_seqs] nor [S_v,H_v,T,n_seqs] */
    KDN_ERR_BETA_SHAPE,        /* beta is not [1,H_v,T,n_seqs] */
    KDN_ERR_STATE_SHAPE,       /* state is not [S_v,S_v,H_v,n_seqs] and contiguous */
    KDN_ERR_TOKENS_SEQS,       /* q, k, v disagree on T or n_seqs */
    KDN_ERR_SNAPSHOTS,         /* K < 1 */
    KDN_ERR_WORKSPACE,         /* workspace NULL or smaller than kdn_gdn_workspace_size() */
    KDN_ERR_ROW_STRIDE,        /* a row is not contiguous (nb[0] != 4) or a stride is not a multiple of 4 bytes */
    KDN_ERR_CHUNK,             /* chunk is not 0, 32 or 64 */
    KDN_ERR_OPTION,            /* head_map or path out of range */
    KDN_ERR_UNSUPPORTED_SHAPE, /* valid ggml shape the kernels cannot run: S_v > 128 (chunked) / 256, a dimension < 1 or too large */
    KDN_ERR_ALIGNMENT,         /* a tensor's data or dst is not 4-byte aligned */
    KDN_ERR_STRIDE,            /* a view spans 2^48 bytes or more, or past the end of the address space */
    KDN_ERR_ALIASING,          /* dst overlaps an input, or the workspace overlaps dst or an input */
    /* Statuses of the launch; kdn_gdn_error_detail() names the kernel and the cause. */
    KDN_ERR_PENDING_ERROR,     /* an error of earlier work waited on this host thread (GPU: the runtime's last
                                  error); nothing launched, the error left in place for its owner */
    KDN_ERR_LAUNCH_FAILED,     /* the runtime failed a launch (GPU) or the executor stopped a kernel (cpu: time
                                  limit, fiber stack overflow, trap); dst and workspace undefined */
    KDN_ERR_KERNEL_REFUSED,    /* a kernel refused a shape the checks accepted (a library defect); dst undefined */
    KDN_ERR_EXECUTOR_SETTINGS, /* cpu: KDN_CPU_SCHEDULE or KDN_CPU_TIMEOUT not understood; nothing ran */
    /* Statuses of a tuning (kdn_tuning_load, kdn_tuning_save, a call's tuning). */
    KDN_ERR_TUNING_FILE,       /* the tuning file cannot be opened, read or written */
    KDN_ERR_TUNING_MALFORMED,  /* not a tuning file of this library, or a value out of its range */
    KDN_ERR_TUNING_VERSION,    /* a tuning of another KDN_TUNING_VERSION */
    KDN_ERR_TUNING_DEVICE,     /* a tuning measured on another device, or for another backend */
    KDN_STATUS_COUNT
} kdn_status;

/* One distinct message per status ("unknown status" past the range). */
const char *kdn_status_message(kdn_status status);
/* What went wrong in the calling host thread's last kdn_gated_delta_net call
 * when it returned one of the launch statuses (KDN_ERR_PENDING_ERROR and
 * after): the kernel and the runtime's or the executor's message; "" after
 * any other status. Per host thread, valid until that thread's next call. */
const char *kdn_gdn_error_detail(void);

/* Bytes of device workspace kdn_gated_delta_net needs for this call (0 when
 * the chosen path needs none); checks the call like the run does. */
kdn_status kdn_gdn_workspace_size(const kdn_gdn_call *call, size_t *bytes);

/* Runs the layer: checks the call, then enqueues the kernels on call->stream.
 * workspace: device memory of at least kdn_gdn_workspace_size() bytes (may be
 * NULL when that is 0). */
kdn_status kdn_gated_delta_net(const kdn_gdn_call *call, void *workspace, size_t workspace_bytes);

/* The path KDN_PATH_AUTO takes for this call (KDN_PATH_RECURRENT or KDN_PATH_CHUNKED). */
kdn_status kdn_gdn_chosen_path(const kdn_gdn_call *call, kdn_path *path);
/* KDN_PATH_AUTO's crossover on this build's backend for a batch of n_seqs
 * sequences: recurrent for T <= it (tokens per sequence), chunked past it. */
int kdn_gdn_recurrent_max_t(int n_seqs);
const char *kdn_gdn_backend(void); /* "hip", "cuda" or "cpu" */

/* ---- tuning (docs/api.md, "Tuning"; kernels/tuning.c) ---------------------
 * kdn_tuning_defaults: the build's built-in constants (device "").
 * kdn_tuning_load: reads a tuning file and checks it whole (its format, its
 *   version, its backend and that its device is the calling thread's current
 *   device); *t is written only when the status is KDN_OK.
 * kdn_tuning_save: checks t as a call would and writes it to path (through a
 *   temporary file renamed over path: a reader never sees half a file).
 * kdn_tuning_recurrent_max_t: t's crossover for n_seqs (NULL: the built-in
 *   one, as kdn_gdn_recurrent_max_t); t must have passed a check. */
void kdn_tuning_defaults(kdn_tuning *t);
kdn_status kdn_tuning_load(const char *path, kdn_tuning *t);
kdn_status kdn_tuning_save(const char *path, const kdn_tuning *t);
int kdn_tuning_recurrent_max_t(const kdn_tuning *t, int n_seqs);

#ifdef __cplusplus
}
#endif
#endif
