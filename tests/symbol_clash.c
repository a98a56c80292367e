/* Names libkdn uses inside (the CPU executor's thread indices, a race
 * detector hook, internal kdn_ functions), defined by the caller for itself:
 * a program linking libkdn.a with this file must link, and (CPU build) the
 * example it is linked with must still pass (tests/test_symbols.sh). */
struct dim { unsigned x, y, z; };
struct dim gridDim = {1, 2, 3}, blockDim = {4, 5, 6}, blockIdx = {7, 8, 9}, threadIdx = {10, 11, 12};

void __tsan_read4(void *p);
void __tsan_read4(void *p) { (void)p; }

int kdn_malloc(void);
int kdn_malloc(void) { return 0; }
int kdn_launch_stream;
