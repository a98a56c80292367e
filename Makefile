# One kernel source, three builds:
#   make                 HIP for gfx906 (the product)
#   make BACKEND=cuda    the same kernels through nvcc, for NVIDIA GPUs
#   make BACKEND=cpu     the same kernels on the host's SIMT executor (wave64)
#   make BACKEND=cpu SANITIZE=1   ... under AddressSanitizer and UBSan
BACKEND    ?= hip
HIPCC      ?= hipcc
GPU_TARGET ?= gfx906
NVCC       ?= nvcc
CUDA_ARCH  ?= sm_90
CC         ?= cc
CXX        ?= g++
SANITIZE   ?= 0

WARN    := -Wall -Wextra
CFLAGS  := -std=c11 -O2 -g $(WARN) -Werror
LDLIBS  := -lm

KERNEL_SRC := $(wildcard kernels/*.cpp)
HOST_SRC   := $(wildcard harness/*.c reference/*.c phases/*.c)

ifeq ($(BACKEND),hip)
  KCXX    := $(HIPCC)
  KFLAGS  := -x hip --offload-arch=$(GPU_TARGET) -O3 -DKDN_BACKEND_HIP -DKDN_TARGET='"$(GPU_TARGET)"' $(WARN)
  LINK    := $(HIPCC) --offload-arch=$(GPU_TARGET)
  RUNTIME := kernels/backend/runtime_gpu.cpp
else ifeq ($(BACKEND),cuda)
  KCXX    := $(NVCC)
  KFLAGS  := -x cu -arch=$(CUDA_ARCH) -O3 -lineinfo -DKDN_BACKEND_CUDA -DKDN_TARGET='"$(CUDA_ARCH)"' -Xcompiler "$(WARN)"
  LINK    := $(NVCC) -arch=$(CUDA_ARCH)
  RUNTIME := kernels/backend/runtime_gpu.cpp
else ifeq ($(BACKEND),cpu)
  KCXX    := $(CXX)
  KFLAGS  := -x c++ -std=c++17 -O2 -g -DKDN_BACKEND_CPU $(WARN) -Werror
  LINK    := $(CXX)
  RUNTIME := kernels/backend/runtime_cpu.cpp kernels/backend/simt_cpu.cpp
else
  $(error BACKEND must be hip, cuda or cpu (got '$(BACKEND)'))
endif

BUILD := build/$(BACKEND)
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

HOST_OBJ   := $(HOST_SRC:%.c=$(BUILD)/%.o)
KERNEL_OBJ := $(patsubst %.cpp,$(BUILD)/%.o,$(KERNEL_SRC) $(RUNTIME))
HEADERS    := $(wildcard harness/*.h reference/*.h phases/*.h kernels/*.h kernels/backend/*.h)

.PHONY: all clean test check-env test_deltanet resources resources-check
all: test_deltanet

# The binary of the last backend built; each backend keeps its own objects.
test_deltanet: $(BUILD)/test_deltanet
	@cp $< $@

$(BUILD)/test_deltanet: $(HOST_OBJ) $(KERNEL_OBJ)
	@echo "  LINK  $@"
	@$(LINK) $^ -o $@ $(LDLIBS)

$(BUILD)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cpp $(HEADERS)
	@mkdir -p $(dir $@)
	@echo "  $(BACKEND)  $<"
	@$(KCXX) $(KFLAGS) -c $< -o $@

check-env:
	@echo "backend:  $(BACKEND)"
	@echo "compiler: $(KCXX)"
	@$(KCXX) --version 2>/dev/null | head -n 3 || echo "  (not found)"
	@echo "target:   $(if $(filter hip,$(BACKEND)),$(GPU_TARGET),$(if $(filter cuda,$(BACKEND)),$(CUDA_ARCH),host-wave64))"
	@$(MAKE) --no-print-directory BACKEND=$(BACKEND) $(BUILD)/test_deltanet >/dev/null && $(BUILD)/test_deltanet --env

# gfx906 resource use of every kernel, from the gfx906 compiler: `make
# resources` rewrites the table in docs/kernels.md, `make resources-check`
# fails on LDS > 64 KB, scratch or VGPR spills (run by make test where hipcc exists).
resources:
	@mkdir -p build
	@tools/gfx906_resources.sh $(KERNEL_SRC) > build/resources.md
	@awk -v table=build/resources.md \
	    '/<!-- resources:end/ { skip = 0 } !skip { print } \
	     /<!-- resources:begin/ { while ((getline line < table) > 0) print line; skip = 1 }' \
	    docs/kernels.md > build/kernels.md && mv build/kernels.md docs/kernels.md
	@echo "docs/kernels.md: resource table updated"

resources-check:
	@tools/gfx906_resources.sh --check $(KERNEL_SRC) > /dev/null && echo "gfx906 resources: no kernel over 64 KB LDS, no scratch, no VGPR spills"

include tests/tests.mk

clean:
	rm -rf build test_deltanet
