# make test: what CI runs, cheapest first, the ladder last (its closing line
# "N passed, N failed" is the summary CI reads):
#   the harness's unit tests and the executor's error paths (CPU build),
#   the harness's files in layers, no call loop (tests/harness_calls.py),
#   the library from several host threads at once, its failures and the
#   program's signal state (tests/test_threads.c),
#   the same under AddressSanitizer, with phases 1-3 of the ladder,
#   the gfx906 build, its resource limits, the ISA gates of
#   lens/ (python3 -m lens isa-check) and its symbols (where hipcc exists; with
#   TOOLCHAIN=rocm6 also with ROCm 6.4 in its chroot, as CI runs it),
#   the header dependencies of both builds: an edited header rebuilds exactly
#   the objects that include it (tests/test_depend.py),
#   the command line's exit statuses and determinism (tests/cli.sh),
#   --dump/--load/--set round trips, read back with numpy (tests/test_tensors.sh),
#   .github/workflows against the workflow schema (tests/test_workflows.sh),
#   tools/setup/deps.sh installing only what is missing (tests/test_deps.sh),
#   results/index.tsv naming every file of results/ (tools/report/results_index.py),
#   each of its commits in the history, its kernels column true, each file
#   quoted outside results/ and each results/ path the docs name there (tests/results_check.py),
#   no issue numbers or work periods in the tree (make history-check),
#   the docs' links and README.md's ladder table (tests/docs_check.py),
#   every #include pointing down the layers, no loop (tests/test_layers.py),
#   the code's sizes (tests/test_sizes.py),
#   the reference against itself, result logs and reports,
#   the product kernels under the executor's descending and shuffled
#   schedules (races the ascending order hides), the executor's unit tests,
#   the threaded library test and the product kernels on the race detector's
#   build (build/cpu-race: every LDS access checked), the quick subset of the
#   planted faults (tests/mutate.sh; make mutate runs them all), the
#   library's argument checks under libFuzzer, a short run from a fixed seed
#   (tests/fuzz_gdn_args.c; make fuzz runs long), every
#   line of kernels/ and phases/kernels/ run (make coverage-quick, tests/coverage.mk),
#   make install + a C caller built with pkg-config (tests/test_install.sh),
#   libkdn.a's exported symbols: the public API only (tests/test_symbols.sh),
#   the end-to-end tools on hand-made data and stand-in programs (tests/test_e2e_tools.sh),
#   the llama-server check against a stand-in server, honest, leaking a slot's state and NaN (tests/test_server_check.sh),
#   every other script of tools/ and integration/ parsing its arguments, and a tiny case where one runs
#   without a GPU (tests/test_tool_smokes.sh),
#   ggml-kdn.patch on a tree made from its own context and that tree's variants, the state-gather elision
#   refused (tests/test_patch_trees.sh),
#   the graph-capture test's skip on the CPU build (tests/test_graph.c; make test-gfx906 compiles it for HIP),
#   every phase of the ladder on the CPU build, its log compared with
#   results/baseline-cpu.tsv (make baseline rewrites it): its lines shown
#   as its tests end (CI shows them as they come), the comparison, then its
#   closing line again, last.
# tests/*.cpp are kernel files: the pattern rule of the Makefile compiles
# them with $(KCXX) $(KFLAGS) like kernels/*.cpp and phases/kernels/*.cpp.
UNIT_OBJ := $(filter-out $(BUILD)/programs/test_deltanet.o,$(HOST_OBJ)) $(LADDER_OBJ) $(KERNEL_OBJ)

$(BUILD)/test_harness: $(BUILD)/tests/test_harness.o $(BUILD)/tests/executor_kernels.o $(UNIT_OBJ)
	@echo "  LINK  $@"
	@$(LINK) $^ -o $@ $(LDLIBS)

# libkdn called from several host threads at once, each failure a call can
# meet, and the program's signal state around the calls (tests/test_threads.c;
# linked with the objects: it plants errors through internal launchers,
# which libkdn.a hides).
$(BUILD)/test_threads: $(BUILD)/tests/test_threads.o $(KERNEL_OBJ)
	@echo "  LINK  $@"
	@$(LINK) $^ -o $@ $(LDLIBS)

# Tuning files and a call's tuning (tests/test_tuning.c), and kdn_tune on
# a small shape (tests/test_tune.sh).
$(BUILD)/test_tuning: $(BUILD)/tests/test_tuning.o $(KERNEL_OBJ)
	@echo "  LINK  $@"
	@$(LINK) $^ -o $@ $(LDLIBS)

.PHONY: test-tuning
test-tuning:
	@$(MAKE) --no-print-directory BACKEND=cpu build/cpu/test_tuning build/cpu/kdn_tune
	@build/cpu/test_tuning
	@sh tests/test_tune.sh build/cpu/kdn_tune

# libkdn under stream capture, replayed, and on two streams (tests/test_graph.c): a C caller of
# libkdn.a with the GPU runtime's C API for the capture. The CPU build's binary only says it is skipped
# (no stream to capture); make test-gfx906 compiles the HIP one; GPU machines run it (docs/ci.md).
GRAPH_FLAGS_cpu  := -DKDN_BACKEND_CPU
GRAPH_FLAGS_cuda := -DKDN_BACKEND_CUDA -I$(CUDA_PATH)/include
GRAPH_FLAGS_hip  := -DKDN_BACKEND_HIP -D__HIP_PLATFORM_AMD__ $(addprefix -I,$(wildcard $(HIP_PATH)/include))
$(BUILD)/test_graph: tests/test_graph.c tests/check.h $(BUILD)/libkdn.a
	@echo "  CC    $@"
	@$(LIBS_CC) $(CFLAGS) $(GRAPH_FLAGS_$(BACKEND)) $< $(BUILD)/libkdn.a $(LIB_DEPS) -o $@

# The product's objects and main with phase 1 replaced by a table whose
# second test fails: tests/cli.sh proves exit status 1 with it.
FAILING_OBJ := $(filter-out $(BUILD)/phases/phase1_elementwise.o,$(HOST_OBJ)) $(LADDER_OBJ) $(KERNEL_OBJ)

$(BUILD)/test_failing: $(BUILD)/tests/failing_phase.o $(FAILING_OBJ)
	@echo "  LINK  $@"
	@$(LINK) $^ -o $@ $(LDLIBS)

include tests/reference.mk
include tests/report.mk
include tests/coverage.mk

# libFuzzer over kdn_gated_delta_net's argument checks (tests/fuzz_gdn_args.c,
# docs/ci.md): the target and the entry point's checks (kernels/gated_delta_net.c)
# built by clang with libFuzzer's coverage and UBSan, the kernels and their
# executor the CPU build's objects. make test runs fuzz-quick (the inputs of
# tests/fuzz_seeds, calls that once broke the contract, then FUZZ_RUNS inputs
# from a fixed seed; what it finds goes to build/fuzz/quick-corpus, never to
# the tree); make fuzz runs for FUZZ_SECONDS with a corpus kept in
# build/fuzz/corpus. Skipped, with a line saying so, where clang is missing.
FUZZ_CC      ?= $(firstword $(foreach c,clang-15 clang,$(if $(shell command -v $(c) 2>/dev/null),$(c))))
FUZZ_CFLAGS  := -std=c11 -O1 -g $(WARN) -Werror -fsanitize=fuzzer-no-link,undefined -fno-sanitize-recover=undefined
FUZZ_RUNS    ?= 2000
FUZZ_SECONDS ?= 600
FUZZ_OPTS    := -len_control=0 -max_len=64 -timeout=20 -artifact_prefix=build/fuzz/
FUZZ_OBJ     := build/fuzz/tests/fuzz_gdn_args.o build/fuzz/kernels/gated_delta_net.o \
                $(filter-out $(BUILD)/kernels/gated_delta_net.o,$(KERNEL_OBJ))

build/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  FUZZ  $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) -c $< -o $@
include $(wildcard build/fuzz/*/*.d)

build/fuzz/fuzz_gdn_args: $(FUZZ_OBJ)
	@echo "  LINK  $@"
	@$(FUZZ_CC) -fsanitize=fuzzer,undefined $^ -o $@ -lstdc++ -lm -lpthread

.PHONY: fuzz fuzz-quick
fuzz-quick:
	@if [ -z "$(FUZZ_CC)" ]; then echo "clang not found: the argument fuzzer skipped"; exit 0; fi; \
	 $(MAKE) --no-print-directory BACKEND=cpu build/fuzz/fuzz_gdn_args && \
	 rm -rf build/fuzz/quick-corpus && mkdir -p build/fuzz/quick-corpus && \
	 build/fuzz/fuzz_gdn_args -seed=1 -runs=$(FUZZ_RUNS) $(FUZZ_OPTS) build/fuzz/quick-corpus tests/fuzz_seeds \
	   > build/fuzz/quick.log 2>&1 || \
	 { tail -n 40 build/fuzz/quick.log; exit 1; }; \
	 echo "fuzz: $(FUZZ_RUNS) calls of the argument checks, the contract held ($$(grep -o 'cov: [0-9]*' build/fuzz/quick.log | tail -n 1))"
fuzz:
	@$(MAKE) --no-print-directory BACKEND=cpu build/fuzz/fuzz_gdn_args
	@mkdir -p build/fuzz/corpus
	@build/fuzz/fuzz_gdn_args -max_total_time=$(FUZZ_SECONDS) $(FUZZ_OPTS) build/fuzz/corpus tests/fuzz_seeds

.PHONY: test-asan test-gfx906 test-schedules test-race mutate history-check test-history-check check
# make check: the developer's loop, CPU only, no toolchain beyond gcc and
# python3 (under 2 minutes on 2 cores once built): the harness's unit tests,
# the include layers, the code's sizes, the planted faults' markers, tools/setup/deps.sh, the results
# index and its files against the history and the docs (tests/results_check.py), ggml-kdn.patch on
# trees made from its context (tests/test_patch_trees.sh), the tree's words,
# the gfx906 simulator's self-test, the docs' links and README.md's ladder table (tests/docs_check.py),
# and the ladder's quick rows against the baseline.
# make test (CI) runs all of these and everything else.
check:
	@$(MAKE) --no-print-directory BACKEND=cpu build/cpu/test_deltanet build/cpu/test_harness
	@build/cpu/test_harness
	@python3 tests/test_layers.py --self-test && python3 tests/test_layers.py
	@python3 tests/test_sizes.py --self-test && python3 tests/test_sizes.py
	@sh tests/mutate.sh --check
	@sh tests/test_deps.sh
	@$(MAKE) --no-print-directory test-tuning
	@python3 tools/report/results_index.py --check
	@python3 tests/results_check.py --self-test && python3 tests/results_check.py
	@sh tests/test_patch_trees.sh
	@$(MAKE) --no-print-directory test-history-check
	@python3 -m lens selftest
	@python3 tests/bands_check.py --self-test && python3 tests/bands_check.py
	@python3 tests/mtp_check.py
	@python3 tests/docs_check.py --self-test && python3 tests/docs_check.py build/cpu/test_deltanet
	@sh tests/quick_ladder.sh build/cpu/test_deltanet build/cpu/quick $(QUICK_TESTS)

# The tree speaks of the project, not of its tracker or its work periods:
# git grep must find neither (history lives in git). Outside a git checkout
# (an unpacked tarball) there is no tree to ask: it says it skipped.
HISTORY_WORDS := [Ii][Ss][Ss][Uu][Ee] [0-9]|[Ss][Ee][Ss][Ss][Ii][Oo][Nn] [0-9]
history-check:
	@if ! git rev-parse --git-dir >/dev/null 2>&1; then echo "history-check: skipped: not a git checkout"; \
	elif git grep -n -E '$(HISTORY_WORDS)' -- .; then echo "history-check: the lines above name an issue or a session"; exit 1; \
	else echo "history-check: no issue numbers or sessions in the tree"; fi
# ... and outside a checkout (GIT_DIR pointing nowhere) it says so
test-history-check: history-check
	@GIT_DIR=$$PWD/build/no-git $(MAKE) --no-print-directory history-check | grep -qx "history-check: skipped: not a git checkout" || \
	    { echo "history-check: outside a git checkout it did not say it skipped"; exit 1; }

# Every product kernel (chunked, recurrent), the unfused
# pipeline's barrier kernels and every phase-1 kernel (a fraction of a
# second: lanes that read each other's stores without a barrier pass under
# the ascending order alone), under KDN_CPU_SCHEDULE desc and shuffle:1.
SCHEDULE_TESTS := 'chunked_*' recurrent_decode recurrent_odd_dims 'solve_tri*' 'gemm_*'
test-schedules:
	@for s in desc shuffle:1; do \
	    KDN_CPU_SCHEDULE=$$s build/cpu/test_deltanet $(foreach t,$(SCHEDULE_TESTS),--test $(t)) \
	        > build/cpu/schedule.out 2>&1 || { cat build/cpu/schedule.out; exit 1; }; \
	    KDN_CPU_SCHEDULE=$$s build/cpu/test_deltanet --phase 1 > build/cpu/schedule1.out 2>&1 || \
	        { cat build/cpu/schedule1.out; exit 1; }; \
	    echo "schedule $$s: $$(tail -n 1 build/cpu/schedule.out); phase 1: $$(tail -n 1 build/cpu/schedule1.out)"; done

# The same kernels and the library's (gdn_*) on the race detector's build,
# after its own unit tests (the planted races of tests/executor_kernels.cpp).
RACE_TESTS := $(SCHEDULE_TESTS) 'gdn_*'
test-race:
	@$(MAKE) --no-print-directory BACKEND=cpu RACECHECK=1 build/cpu-race/test_deltanet build/cpu-race/test_harness build/cpu-race/test_threads
	@out=$$(build/cpu-race/test_harness 2>&1); rc=$$?; echo "$$out" | sed 's/^/race: /'; exit $$rc
	@out=$$(build/cpu-race/test_threads 2>&1); rc=$$?; echo "$$out" | sed 's/^/race: /'; exit $$rc
	@build/cpu-race/test_deltanet $(foreach t,$(RACE_TESTS),--test $(t)) > build/cpu-race/race.out 2>&1 || \
	    { cat build/cpu-race/race.out; exit 1; }
	@echo "race: product kernels, every LDS access checked: $$(tail -n 1 build/cpu-race/race.out)"

# The whole generated grid (phases/grid.c, KDN_GRID=full; 48384 cases per layer variant: docs/ci.md's
# nightly job, GRID=I/N for shard I of N): make test runs its 12-case subset per variant.
.PHONY: test-grid
test-grid: build/$(BACKEND)/test_deltanet
	@KDN_GRID=full$(if $(GRID),:$(GRID)) build/$(BACKEND)/test_deltanet --test 'grid_*'

# All planted faults (tests/mutate.sh --all; tens of minutes): docs/ci.md's nightly job.
mutate:
	@sh tests/mutate.sh --all

test-asan:
	@$(MAKE) --no-print-directory BACKEND=cpu SANITIZE=1 build/cpu-asan/test_deltanet build/cpu-asan/test_harness build/cpu-asan/test_threads
	@out=$$(build/cpu-asan/test_harness 2>&1); rc=$$?; echo "$$out" | sed 's/^/asan: /'; exit $$rc
	@out=$$(build/cpu-asan/test_threads 2>&1); rc=$$?; echo "$$out" | sed 's/^/asan: /'; exit $$rc
	@build/cpu-asan/test_deltanet --phase 1-3 > build/asan-ladder.log 2>&1 || { cat build/asan-ladder.log; exit 1; }
	@echo "asan: phases 1-3: $$(tail -n 1 build/asan-ladder.log)"
	@# the state pass's unguarded gfx906 loads (a row past a partial last chunk reads the chunk's last
	@# token) on the last sequence's last chunk, at C = 64 and 32
	@build/cpu-asan/test_deltanet --test chunked_ragged --test chunked_gqa3_c32 > build/asan-chunked.log 2>&1 || \
	    { cat build/asan-chunked.log; exit 1; }
	@echo "asan: partial last chunks: $$(tail -n 1 build/asan-chunked.log)"

# The gfx906 build with the host's hipcc where there is one (Debian 12: ROCm
# 5.2, the quick local check) and, with TOOLCHAIN=rocm6 (CI), with ROCm 6.4
# in its chroot: the build, its resource limits, the ISA gates and the
# library's exported symbols, per toolchain (ROCm 7.2, TOOLCHAIN=rocm7, takes
# the same checks by hand, outside make test: docs/ci.md); with ROCm 6.4
# also the lens's calibration (make calibrate: its microbenchmarks and the
# published kernel rows, each within its tolerance or outside for its stated
# reason; the table goes to build/sim, the committed one stays). The kernel
# rows compile ggml at its measured commits: they run where CALIB_GGML names a
# ggml clone; without one (CI: no network to github.com) the microbenchmark
# rows run alone and a line says the kernel rows were skipped.
GFX906_CHECKS = $(MAKE) --no-print-directory BACKEND=hip TOOLCHAIN=$(1) build/hip$(if $(filter-out host,$(1)),-$(1))/test_deltanet && \
	$(MAKE) --no-print-directory TOOLCHAIN=$(1) resources-check && \
	$(MAKE) --no-print-directory TOOLCHAIN=$(1) isa-check && \
	CC=$(2) sh tests/test_symbols.sh hip $(1)
test-gfx906:
	@python3 -m lens selftest
	@python3 tests/bands_check.py --self-test && python3 tests/bands_check.py
	@python3 tests/mtp_check.py
	@if command -v $(HOST_HIPCC) >/dev/null 2>&1; then $(call GFX906_CHECKS,host,$(CC)) && \
	    $(MAKE) --no-print-directory BACKEND=hip build/hip/test_graph; \
	else echo "hipcc not found: gfx906 build with the host's toolchain skipped"; fi
	@if [ "$(TOOLCHAIN)" = rocm6 ]; then $(call GFX906_CHECKS,rocm6,build/rocm6/bin/cc) && \
	    $(MAKE) --no-print-directory TOOLCHAIN=rocm6 isa-run && \
	    if [ -n "$(CALIB_GGML)" ]; then $(MAKE) --no-print-directory TOOLCHAIN=rocm6 calibrate CALIB_OUT=build/sim/calibration.tsv; \
	    else $(MAKE) --no-print-directory TOOLCHAIN=rocm6 calibrate-micro CALIB_OUT=build/sim/calibration.tsv && \
	         echo "calibrate: the published kernel rows skipped: no ggml tree (CALIB_GGML=DIR runs them)"; fi; fi

test:
	@$(MAKE) --no-print-directory BACKEND=cpu build/cpu/test_deltanet build/cpu/test_harness build/cpu/test_failing build/cpu/test_report_escape build/cpu/test_threads
	@build/cpu/test_harness
	@python3 tests/harness_calls.py
	@build/cpu/test_threads
	@$(MAKE) --no-print-directory test-tuning
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory test-gfx906 TOOLCHAIN=$(TOOLCHAIN)
	@python3 tests/test_depend.py cpu $$([ -x build/hip/test_deltanet ] && echo hip)
	@sh tests/cli.sh build/cpu/test_deltanet build/cpu/test_failing $$([ -x build/hip/test_deltanet ] && echo build/hip/test_deltanet)
	@sh tests/test_tensors.sh build/cpu/test_deltanet
	@sh tests/test_workflows.sh
	@sh tests/test_deps.sh
	@python3 tools/report/results_index.py --check
	@python3 tests/results_check.py --self-test && python3 tests/results_check.py
	@$(MAKE) --no-print-directory test-history-check
	@python3 tests/test_layers.py --self-test && python3 tests/test_layers.py
	@python3 tests/test_sizes.py --self-test && python3 tests/test_sizes.py
	@python3 tests/docs_check.py --self-test && python3 tests/docs_check.py build/cpu/test_deltanet
	@$(MAKE) --no-print-directory BACKEND=cpu test-reference
	@sh tests/test_install.sh cpu
	@sh tests/test_symbols.sh cpu
	@sh tests/test_e2e_tools.sh
	@sh tests/test_server_check.sh
	@sh tests/test_tool_smokes.sh build/cpu/test_deltanet
	@sh tests/test_patch_trees.sh
	@$(MAKE) --no-print-directory BACKEND=cpu build/cpu/test_graph && { build/cpu/test_graph; [ $$? = 77 ]; }
	@$(MAKE) --no-print-directory BACKEND=cpu test-report
	@$(MAKE) --no-print-directory BACKEND=cpu test-schedules
	@$(MAKE) --no-print-directory BACKEND=cpu test-race
	@sh tests/mutate.sh --check
	@sh tests/mutate.sh
	@$(MAKE) --no-print-directory fuzz-quick
	@$(MAKE) --no-print-directory coverage-quick
	@echo "ladder: every phase, each test's line as it ends"
	@{ build/cpu/test_deltanet --log build/cpu/ladder.tsv 2> build/cpu/ladder.err; echo $$? > build/cpu/ladder.rc; } | \
	     tee build/cpu/ladder.out; rc=$$(cat build/cpu/ladder.rc); \
	 build/cpu/test_deltanet --compare results/baseline-cpu.tsv build/cpu/ladder.tsv > build/cpu/baseline.out 2>&1; \
	 crc=$$?; sed 's/^/baseline: /' build/cpu/baseline.out; cat build/cpu/ladder.err; tail -n 1 build/cpu/ladder.out; \
	 [ $$rc = 0 ] && [ $$crc = 0 ]

# tests/kdn_example.c against this backend's libkdn.a, as a caller builds it:
# `make BACKEND=cpu example` runs anywhere; `make BACKEND=cuda example` is the
# GPU caller (its own stream, every buffer from its own allocator), run as
# build/cuda/kdn_example on an NVIDIA GPU; `make example` the same on the MI50.
EXAMPLE_FLAGS_cpu  :=
EXAMPLE_FLAGS_cuda := -DKDN_EXAMPLE_CUDA -I$(CUDA_PATH)/include
EXAMPLE_FLAGS_hip  := -DKDN_EXAMPLE_HIP -D__HIP_PLATFORM_AMD__ $(addprefix -I,$(wildcard $(HIP_PATH)/include))
.PHONY: example
example: $(BUILD)/kdn_example
$(BUILD)/kdn_example: tests/kdn_example.c $(BUILD)/libkdn.a
	@echo "  CC    $@"
	@$(LIBS_CC) -std=c11 $(WARN) -Werror $(EXAMPLE_FLAGS_$(BACKEND)) -Ikernels $< $(BUILD)/libkdn.a $(LIB_DEPS) -o $@
