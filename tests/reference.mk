# make test-reference: the reference proven against itself (chunked form ==
# token recurrence) and a closed form; plain C, no kernels involved.
REF_TEST_SRC := tests/test_reference.c reference/deltanet.c reference/linalg.c

build/test_reference: $(REF_TEST_SRC) reference/deltanet.h reference/linalg.h
	@mkdir -p build
	@echo "  CC    $@"
	@$(CC) -std=c11 -O2 -g $(WARN) -Werror $(REF_TEST_SRC) -o $@ -lm

.PHONY: test-reference
test-reference: build/test_reference
	@build/test_reference
