# One kernel source, three builds:
#   make                 HIP for gfx906 (the product)
#   make BACKEND=cuda    the same kernels through nvcc, for NVIDIA GPUs
#   make BACKEND=cpu     the same kernels on the host's SIMT executor (wave64)
#   make BACKEND=cpu SANITIZE=1   ... under AddressSanitizer and UBSan
#   make BACKEND=cpu RACECHECK=1  ... with the executor's LDS race detector
#   make TOOLCHAIN=rocm6 ...      HIP with ROCm 6.4 (Debian forky's hipcc, clang 21) in a
#                                 chroot under build/rocm6 (tools/setup/rocm_chroot.sh;
#                                 ROCM6_CHROOT=DIR reuses one)
#   make TOOLCHAIN=rocm7 ...      HIP with ROCm 7.2 (Debian experimental's hipcc, clang 22:
#                                 what MI50 users build with today) in a chroot under
#                                 build/rocm7 (ROCM7_CHROOT=DIR reuses one)
BACKEND    ?= hip
HIPCC      ?= hipcc
GPU_TARGET ?= gfx906
NVCC       ?= nvcc
CUDA_ARCH  ?= sm_90
CC         ?= cc
CXX        ?= g++
SANITIZE   ?= 0
RACECHECK  ?= 0
TOOLCHAIN  ?= host
LIBS_CC     = $(CC)
HOST_HIPCC  = $(HIPCC)

# TOOLCHAIN=rocm6, rocm7: hipcc and LLVM's tools run in that toolchain's chroot
# (the wrappers in build/TOOLCHAIN/bin, written by `tools/setup/rocm_chroot.sh
# TOOLCHAIN setup`, which makes the chroot the first time: root, debootstrap,
# 3 GB, network); the HIP objects go to build/hip-TOOLCHAIN, the ISA lens's to
# build/isa-TOOLCHAIN. TOOLCHAIN=host (the default): the host's hipcc (Debian
# 12: ROCm 5.2). The chroot toolchains and the simulator's label for each (its
# rows in results/gfx906-sim.tsv):
ROCM_TOOLCHAINS := rocm6 rocm7
SIM_LABEL_rocm6 := rocm6.4
SIM_LABEL_rocm7 := rocm7.2
ifneq ($(filter $(ROCM_TOOLCHAINS),$(TOOLCHAIN)),)
  ROCM_BIN   := build/$(TOOLCHAIN)/bin
  # what tools/setup/rocm_chroot.sh reads for this toolchain: ROCM6_CHROOT, ROCM6_BIND, ...
  ROCM_VAR   := $(subst rocm,ROCM,$(TOOLCHAIN))
  HOST_HIPCC := $(HIPCC)
  override HIPCC := $(ROCM_BIN)/hipcc
  LIBS_CC   := $(ROCM_BIN)/cc
  ISA_ENV   := HIPCC=$(ROCM_BIN)/hipcc OBJDUMP=$(ROCM_BIN)/llvm-objdump READELF=$(ROCM_BIN)/llvm-readelf \
               ISA_BUILD=build/isa-$(TOOLCHAIN)
  TOOLCHAIN_READY := $(TOOLCHAIN)-chroot
  GGML_READY      := $(TOOLCHAIN)-chroot-ggml
  # the simulator's label (its rows in results/gfx906-sim.tsv) and code objects
  SIM_TOOLCHAIN := $(SIM_LABEL_$(TOOLCHAIN))
  SIM_OBJECTS   := build/isa-$(TOOLCHAIN)
  ifeq ($(BACKEND),hip)
    BUILD_SUFFIX := -$(TOOLCHAIN)
  endif
else ifneq ($(TOOLCHAIN),host)
  $(error TOOLCHAIN must be host or one of $(ROCM_TOOLCHAINS) (got '$(TOOLCHAIN)'))
endif
# A command line's TOOLCHAIN stays with this make: the makes and tools it
# starts (make test's steps, tests/test_depend.py) build with the host's
# toolchain in build/hip unless told otherwise (test-gfx906 names it per run).
MAKEOVERRIDES := $(filter-out TOOLCHAIN=%,$(MAKEOVERRIDES))
unexport TOOLCHAIN

# One language standard and warnings as errors for every backend and toolchain.
WARN    := -Wall -Wextra
CFLAGS  := -std=c11 -O2 -g -fPIC $(WARN) -Werror
LDLIBS  := -lm -lpthread

# The library: the product kernels and the entry point (kernels/). The
# ladder's own kernels (phases/kernels/) are linked into the test programs only.
KERNEL_SRC := $(wildcard kernels/*.cpp)
LIB_C_SRC  := $(wildcard kernels/*.c)
LADDER_KERNEL_SRC := $(wildcard phases/kernels/*.cpp)
HOST_SRC   := $(wildcard harness/*.c reference/*.c phases/*.c) programs/test_deltanet.c

ifeq ($(BACKEND),hip)
  KCXX    := $(HIPCC)
  KFLAGS  := -x hip -std=c++17 --offload-arch=$(GPU_TARGET) -O3 -fPIC -DKDN_BACKEND_HIP -DKDN_TARGET='"$(GPU_TARGET)"' \
             $(WARN) -Werror
  LINK    := $(HIPCC) --offload-arch=$(GPU_TARGET)
  RUNTIME := kernels/backend/runtime_gpu.cpp kernels/backend/query_cache.cpp
else ifeq ($(BACKEND),cuda)
  KCXX    := $(NVCC)
  # -diag-suppress 128: nvcc calls the code after a template-constant early
  # return (`if (kVec) { ...; return; }`) unreachable in that instantiation;
  # the other instantiation runs it, and gcc and clang see no fault
  KFLAGS  := -x cu -std=c++17 -arch=$(CUDA_ARCH) -O3 -lineinfo -DKDN_BACKEND_CUDA -DKDN_TARGET='"$(CUDA_ARCH)"' \
             -Werror all-warnings -diag-suppress 128 -Xcompiler "-fPIC $(WARN) -Werror"
  LINK    := $(NVCC) -arch=$(CUDA_ARCH)
  RUNTIME := kernels/backend/runtime_gpu.cpp kernels/backend/query_cache.cpp
else ifeq ($(BACKEND),cpu)
  KCXX    := $(CXX)
  # stack-clash probes: a frame larger than a fiber's stack hits its guard page;
  # -fno-gnu-unique: a template's static locals become weak symbols that libkdn.a
  # can make local (objcopy leaves "unique" globals global)
  KFLAGS  := -x c++ -std=c++17 -O2 -g -fPIC -DKDN_BACKEND_CPU -fstack-clash-protection -fno-gnu-unique $(WARN) -Werror
  LINK    := $(CXX)
  RUNTIME := kernels/backend/runtime_cpu.cpp kernels/backend/simt_cpu.cpp kernels/backend/simt_executor.cpp \
             kernels/backend/simt_watchdog.cpp kernels/backend/simt_race.cpp kernels/backend/query_cache.cpp
else
  $(error BACKEND must be hip, cuda or cpu (got '$(BACKEND)'))
endif

BUILD := build/$(BACKEND)$(BUILD_SUFFIX)
# What a C program linking the static libkdn also needs (kdn.pc's Libs).
HIP_PATH  ?= /opt/rocm
CUDA_PATH ?= /usr/local/cuda
# -L only for a runtime the C compiler does not find by itself (Debian keeps
# libamdhip64 in the default path; /opt/rocm/lib does not exist there), and
# only to a directory that exists.
lib_dir = $(if $(filter /%,$(shell $(LIBS_CC) -print-file-name=lib$(1).so)),,$(addprefix -L,$(wildcard $(2))))
LIB_DEPS_cpu   = -lstdc++ -lm -lpthread
LIB_DEPS_hip   = $(call lib_dir,amdhip64,$(HIP_PATH)/lib) -lamdhip64 -lstdc++ -lm
LIB_DEPS_cuda  = $(call lib_dir,cudart,$(CUDA_PATH)/lib64) -lcudart -lstdc++ -lm
LIB_DEPS = $(LIB_DEPS_$(BACKEND))
ifeq ($(SANITIZE),1)
  ifneq ($(BACKEND),cpu)
    $(error SANITIZE=1 needs BACKEND=cpu)
  endif
  SAN    := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  CFLAGS += $(SAN)
  KFLAGS += $(SAN)
  LINK   += $(SAN)
  BUILD  := build/cpu-asan
endif
# The race detector (kernels/backend/simt_race.cpp): the kernels call the
# executor at every load and store (the hooks of -fsanitize=thread, without
# its runtime library); the executor itself is not instrumented.
ifeq ($(RACECHECK),1)
  ifneq ($(BACKEND)$(SANITIZE),cpu0)
    $(error RACECHECK=1 needs BACKEND=cpu without SANITIZE)
  endif
  RACE   := -fsanitize=thread --param tsan-instrument-func-entry-exit=0
  BUILD  := build/cpu-race
  KFLAGS += $(RACE)
  $(BUILD)/kernels/backend/%.o: KFLAGS := $(filter-out $(RACE),$(KFLAGS))
endif

HOST_OBJ   := $(HOST_SRC:%.c=$(BUILD)/%.o)
KERNEL_OBJ := $(patsubst %.cpp,$(BUILD)/%.o,$(KERNEL_SRC) $(RUNTIME)) $(LIB_C_SRC:%.c=$(BUILD)/%.o)
LADDER_OBJ := $(LADDER_KERNEL_SRC:%.cpp=$(BUILD)/%.o)

.PHONY: all clean test check-env test_deltanet resources resources-check lib install tune
all: test_deltanet tune

# The binary of the last backend built; each backend keeps its own objects.
test_deltanet: $(BUILD)/test_deltanet
	@cp $< $@

# The harness tests the library's internals (its kernels' entry points, the
# executor) beside the ladder's own kernels, so it links the library's
# objects; callers link libkdn.a or libkdn.so, which export the API only.
$(BUILD)/test_deltanet: $(HOST_OBJ) $(LADDER_OBJ) $(KERNEL_OBJ)
	@echo "  LINK  $@"
	@$(LINK) $^ -o $@ $(LDLIBS)

# kdn_tune: the dispatch's constants measured on this device, as a tuning
# file the library loads (programs/kdn_tune.c; docs/api.md, "Tuning"). It
# links the objects: it times the calls with the runtime's events.
tune: $(BUILD)/kdn_tune
$(BUILD)/kdn_tune: $(BUILD)/programs/kdn_tune.o $(KERNEL_OBJ)
	@echo "  LINK  $@"
	@$(LINK) $^ -o $@ $(LDLIBS)

# libkdn: the product kernels, their runtime and the entry point (kernels/gated_delta_net.h).
lib: $(BUILD)/libkdn.a $(BUILD)/libkdn.so

# Both libraries export the public API only: the functions
# kernels/gated_delta_net.h declares (libkdn.syms, one per line; tests/test_install.sh
# and tests/test_symbols.sh check with nm).
$(BUILD)/libkdn.syms: kernels/gated_delta_net.h
	@mkdir -p $(dir $@)
	@sed -n 's/^[a-z_][a-z_ ]*[ *]\(kdn_[a-z_0-9]*\)(.*/\1/p' $< > $@

# The static library is one object: the library's objects linked together
# (ld -r), every global symbol but the API then made local, so that the
# executor's threadIdx/blockIdx, the race detector's __tsan_* hooks, C++ names
# and internal kdn_* functions never meet a caller's symbols. COMDAT groups
# are dissolved first (-R .group): a local symbol in a group the final link
# drops in favour of the caller's copy would dangle; the library keeps its
# own copies instead.
$(BUILD)/libkdn.o: $(KERNEL_OBJ) $(BUILD)/libkdn.syms
	@echo "  LD -r $@"
	@ld -r $(KERNEL_OBJ) -o $@.all && objcopy -R .group --keep-global-symbols=$(BUILD)/libkdn.syms $@.all $@ && rm -f $@.all

$(BUILD)/libkdn.a: $(BUILD)/libkdn.o
	@echo "  AR    $@"
	@rm -f $@ && ar rcs $@ $^

# The shared library: a version script made from the same list.
$(BUILD)/libkdn.map: $(BUILD)/libkdn.syms
	@{ echo '{ global:'; sed 's/.*/    &;/' $<; echo '  local: *; };'; } > $@
SO_EXPORTS := $(if $(filter cuda,$(BACKEND)),-Xlinker --version-script=$(BUILD)/libkdn.map,-Wl,--version-script=$(BUILD)/libkdn.map)

$(BUILD)/libkdn.so: $(KERNEL_OBJ) $(BUILD)/libkdn.map
	@echo "  LINK  $@"
	@$(LINK) -shared $(KERNEL_OBJ) -o $@ $(LDLIBS) $(SO_EXPORTS)

# make install PREFIX=DIR: header, both libraries and kdn.pc (pkg-config).
PREFIX ?= /usr/local
install: lib
	@mkdir -p $(PREFIX)/include $(PREFIX)/lib/pkgconfig
	@cp kernels/gated_delta_net.h $(PREFIX)/include/
	@cp $(BUILD)/libkdn.a $(BUILD)/libkdn.so $(PREFIX)/lib/
	@sed -e 's|@PREFIX@|$(abspath $(PREFIX))|' -e 's|@BACKEND@|$(BACKEND)|' -e 's|@LIBS@|$(LIB_DEPS)|' \
	    kernels/kdn.pc.in > $(PREFIX)/lib/pkgconfig/kdn.pc
	@echo "installed libkdn ($(BACKEND)) under $(PREFIX)"

# Header dependencies: each compile also writes the headers it read to its
# object's .d (-MMD: the project's, not the system's; -MP: an empty rule per
# header, so a deleted header does not stop the build), included below, so an
# edited header rebuilds exactly the objects that include it. gcc, hipcc
# (clang) and nvcc take the same four flags. An object without its .d (built
# before, or the .d deleted) is rebuilt: the .d's empty rule "remakes" it.
# hipcc writes the .d after the object: DEPDATE dates it as its object, or
# the object would always look older than a prerequisite.
DEPFLAGS = -MMD -MP -MF $(@:.o=.d) -MT $@
DEPDATE  = touch -c -r $@ $(@:.o=.d)

$(BUILD)/%.o: %.c $(BUILD)/%.d
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@ && $(DEPDATE)

$(BUILD)/%.o: %.cpp $(BUILD)/%.d | $(TOOLCHAIN_READY)
	@mkdir -p $(dir $@)
	@echo "  $(BACKEND)  $<"
	@$(KCXX) $(KFLAGS) $(DEPFLAGS) -c $< -o $@ && $(DEPDATE)

# Named (not a pattern), so make does not take a missing .d for an
# intermediate file it may skip.
DEPFILES := $(patsubst %,$(BUILD)/%.d,$(basename $(wildcard \
    $(foreach d,programs harness reference phases phases/kernels kernels kernels/backend tests,$(d)/*.c $(d)/*.cpp))))
$(DEPFILES):
include $(wildcard $(DEPFILES))

# Provenance baked into the binary at build time (the log's "# commit" line,
# --env): the commit, "-dirty" when tracked files differ from it. The stamp
# is rewritten only when that changes, so only report.o is rebuilt.
PROVENANCE := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)$(shell \
    git rev-parse --git-dir >/dev/null 2>&1 && { git diff --quiet HEAD -- 2>/dev/null || echo -dirty; })
$(BUILD)/provenance.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(PROVENANCE)' | cmp -s - $@ || echo '$(PROVENANCE)' > $@
$(BUILD)/harness/report.o: $(BUILD)/provenance.stamp
$(BUILD)/harness/report.o: CFLAGS += -DBUILD_PROVENANCE='"$(PROVENANCE)"'
.PHONY: FORCE

# What make test needs and this machine lacks, from Debian's archive (tools/setup/deps.sh).
.PHONY: deps
deps:
	@tools/setup/deps.sh

check-env:
	@echo "backend:  $(BACKEND)"
	@echo "compiler: $(KCXX)"
	@$(KCXX) --version 2>/dev/null | head -n 3 || echo "  (not found)"
	@echo "target:   $(if $(filter hip,$(BACKEND)),$(GPU_TARGET),$(if $(filter cuda,$(BACKEND)),$(CUDA_ARCH),host-wave64))"
	@$(MAKE) --no-print-directory BACKEND=$(BACKEND) $(BUILD)/test_deltanet >/dev/null && $(BUILD)/test_deltanet --env

# gfx906 resource use of every kernel, from the gfx906 compiler: `make
# resources` rewrites the table in docs/kernels.md, `make resources-check`
# fails on LDS > 64 KB, scratch or VGPR spills (run by make test where hipcc exists).
resources: $(TOOLCHAIN_READY)
	@mkdir -p build
	@HIPCC=$(HIPCC) lens/gfx906_resources.sh $(KERNEL_SRC) $(LADDER_KERNEL_SRC) > build/resources.md
	@awk -v table=build/resources.md \
	    '/<!-- resources:end/ { skip = 0 } !skip { print } \
	     /<!-- resources:begin/ { while ((getline line < table) > 0) print line; skip = 1 }' \
	    docs/kernels.md > build/kernels.md && mv build/kernels.md docs/kernels.md
	@echo "docs/kernels.md: resource table updated"

resources-check: $(TOOLCHAIN_READY)
	@HIPCC=$(HIPCC) lens/gfx906_resources.sh --check $(KERNEL_SRC) $(LADDER_KERNEL_SRC) > /dev/null && echo "gfx906 resources: no kernel over 64 KB LDS, no scratch, no VGPR spills"

# The gfx906 ISA lens and the MI50 simulator (lens/, python3 -m lens; docs/performance.md "MI50 simulator"):
#   make isa            per kernel: resources and static loop counts (TSV in build/isa/); then the
#                       product's kernels and paths simulated at the Qwen3-Next shapes ->
#                       results/gfx906-sim.tsv (this toolchain's rows; -loops.tsv, -code.tsv beside)
#                       SIM_TOOLCHAIN / SIM_OBJECTS: another toolchain's label and code objects
#   make isa-check      the gates make test runs where hipcc exists (static; simulated time <= +5 %;
#                       the fast-forward within 1 % of clock by clock)
#   make isa-vs-llama GGML=DIR   llama.cpp's own kernel (from the ggml or llama.cpp checkout DIR, built
#                       for gfx906 under build/, never kept) and libkdn simulated at the same shapes ->
#                       results/gfx906-vs-llama.tsv
#   make isa-mtp        MTP verify calls (T = K = 2..4 tokens) simulated against their bytes ->
#                       results/gfx906-mtp.tsv
#   make calibrate      the simulator's calibration kernels (lens/calib/) simulated against published
#                       gfx906 measurements -> results/gfx906-in-sample.tsv
.PHONY: isa isa-check isa-vs-llama isa-mtp calibrate calibrate-micro ggml-headers
SIM_ARGS = $(if $(SIM_OBJECTS),$(SIM_TOOLCHAIN) $(SIM_OBJECTS))
# The simulator is pure Python (standard library). PyPy (Debian's pypy3) runs the long simulations of
# the tables 2-3x faster than CPython, so make isa and calibrate take it where installed; the gate's
# short ones (one or two chunks) are faster on CPython (PyPy's JIT warm-up). Simulated launches are
# cached in build/sim/cache.tsv (keyed by code, launch and simulator): a second run simulates nothing.
SIM_PYTHON ?= $(if $(shell command -v pypy3),pypy3,python3)
isa: $(TOOLCHAIN_READY)
	@$(ISA_ENV) python3 -m lens isa-report
	@$(ISA_ENV) $(SIM_PYTHON) -m lens table $(SIM_ARGS)
# make isa-run [ISA_RUN=full]: the product's gfx906 objects, built now, run by the lens's functional mode on
# generated inputs and checked against an fp64 recurrence and the CPU executor's libkdn (build/cpu) on the same
# inputs (lens/isa_run.py); log build/isa-run*.log;
# ISA_FAULT=waitcnt|lds plants a fault in the built objects first (lens/isa_faults.py: it must FAIL)
# ISA_CONTRACT=off builds them with -ffp-contract=off: the recurrent kernel's rows then match the CPU bit for bit
ISA_RUN ?= quick
.PHONY: isa-run
isa-run: $(TOOLCHAIN_READY)
	@$(MAKE) --no-print-directory BACKEND=cpu build/cpu/libkdn.so
	@$(ISA_ENV) ISA_FAULT=$(ISA_FAULT) ISA_CONTRACT=$(ISA_CONTRACT) python3 -m lens isa-run $(ISA_RUN) build/isa-run$(if $(filter-out host,$(TOOLCHAIN)),-$(TOOLCHAIN)).log
isa-check: $(TOOLCHAIN_READY)
	@$(ISA_ENV) python3 -m lens isa-check
	@$(ISA_ENV) python3 -m lens check $(SIM_ARGS)
	@$(ISA_ENV) python3 -m lens ff-check $(SIM_ARGS)
# ggml's HIP sources include hipBLAS's header: TOOLCHAIN=rocm6 or rocm7 installs it in the chroot (setup --ggml);
# the host's hipcc needs it installed (Debian: libhipblas-dev), else the target says so and stops (77).
GGML_READY ?= ggml-headers
ggml-headers:
	@printf '#include <hipblas/hipblas.h>\n' | $(HIPCC) -x hip --cuda-device-only -E - > /dev/null 2>&1 || \
	    { echo "ggml's HIP build needs hipBLAS's headers, which $(HIPCC) lacks: install libhipblas-dev, or use TOOLCHAIN=rocm6 or rocm7 (its chroot gets them from tools/setup/rocm_chroot.sh TOOLCHAIN setup --ggml)"; exit 77; }
isa-vs-llama: $(TOOLCHAIN_READY) $(GGML_READY)
	@test -n "$(GGML)" || { echo "make isa-vs-llama: GGML=DIR (a ggml or llama.cpp checkout) is needed"; exit 2; }
	@$(if $(ROCM_VAR),$(ROCM_VAR)_BIND="$(abspath $(GGML))") $(ISA_ENV) $(SIM_PYTHON) -m lens vs-llama $(GGML) $(SIM_ARGS)
isa-mtp: $(TOOLCHAIN_READY)
	@$(ISA_ENV) $(SIM_PYTHON) -m lens mtp $(SIM_ARGS)
# calibrate: the kernel rows need ggml's trees (CALIB_GGML=DIR: a ggml clone or mirror; else one is cloned
# under build/calib) and, for ggml's HIP headers, GGML_READY. CALIB_OUT: where the table goes.
CALIB_OUT ?= results/gfx906-in-sample.tsv
calibrate: $(TOOLCHAIN_READY) $(GGML_READY)
	@$(ISA_ENV) $(SIM_PYTHON) -m lens calibrate $(CALIB_OUT)
# validate PEERS_FORK=DIR: published gfx906 kernel timings predicted out of sample (leave one source out;
# the fork's kernels from the llama.cpp-gfx906 fork checkout DIR, ggml's from CALIB_GGML's trees) ->
# results/gfx906-calibration.tsv, then results/gfx906-bands.tsv. peers PEERS_FORK=DIR: libkdn and the
# fork's kernels at the same shapes -> results/gfx906-peers.tsv (lens/peers.py; SIM_SHAPES=T:B:H_v...).
.PHONY: validate peers
validate: $(TOOLCHAIN_READY) $(GGML_READY)
	@test -n "$(PEERS_FORK)" || { echo "make validate: PEERS_FORK=DIR (a llama.cpp-gfx906 fork checkout) is needed"; exit 2; }
	@$(if $(ROCM_VAR),$(ROCM_VAR)_BIND="$(abspath $(PEERS_FORK))") $(ISA_ENV) $(SIM_PYTHON) -m lens validate $(PEERS_FORK) $(SIM_TOOLCHAIN)
	@python3 -m lens bands
peers: $(TOOLCHAIN_READY) $(GGML_READY)
	@test -n "$(PEERS_FORK)" || { echo "make peers: PEERS_FORK=DIR (a llama.cpp-gfx906 fork checkout) is needed"; exit 2; }
	@$(if $(ROCM_VAR),$(ROCM_VAR)_BIND="$(abspath $(PEERS_FORK))") $(ISA_ENV) $(SIM_PYTHON) -m lens peers $(PEERS_FORK) $(SIM_ARGS)
# calibrate-micro: the microbenchmark rows alone (no ggml tree, no hipBLAS headers), what make test runs
# where no ggml tree is given.
calibrate-micro: $(TOOLCHAIN_READY)
	@CALIB_KERNELS=0 $(ISA_ENV) $(SIM_PYTHON) -m lens calibrate $(CALIB_OUT)

# Each ROCm toolchain's chroot and its tool wrappers (made once, then only checked):
# rocm6-chroot, rocm7-chroot and, with what a ggml build needs, rocm6-chroot-ggml, rocm7-chroot-ggml.
.PHONY: $(ROCM_TOOLCHAINS:%=%-chroot) $(ROCM_TOOLCHAINS:%=%-chroot-ggml)
$(ROCM_TOOLCHAINS:%=%-chroot): %-chroot:
	@tools/setup/rocm_chroot.sh $* setup
$(ROCM_TOOLCHAINS:%=%-chroot-ggml): %-chroot-ggml: %-chroot
	@tools/setup/rocm_chroot.sh $* setup --ggml

include tests/tests.mk

clean:
	rm -rf build test_deltanet
