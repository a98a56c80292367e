# Line coverage of kernels/, phases/kernels/ and reference/ on the CPU build, with gcc's gcov
# (no other package; tests/coverage.py reads `gcov --json-format`). Its own
# objects in build/coverage (-O0 --coverage: a line is counted where it is
# written, not where the optimiser moved it), so build/cpu is left alone.
#   make coverage        over what make test runs on the kernels: the
#                        harness's unit tests, the threaded library test, the tuning test, --env (tests/cli.sh), --bench
#                        (tests/test_tensors.sh) and the whole ladder; the
#                        figure docs/ci.md quotes (a few CPU minutes: nightly)
#   make coverage-quick  the same with the ladder cut to phases 1-7 and the
#                        phase-8 rows below (seconds; make test runs it)
# Both print per-file and total line coverage and fail when a line of
# kernels/ or phases/kernels/ did not run and tests/coverage-exempt.txt does not name it with a
# reason. The quick rows are a subset of make test's ladder, so a line they
# run is a line make test runs.
.PHONY: coverage coverage-quick
COVERAGE_BUILD := build/coverage
# The quick phase-8 rows (make coverage-quick here, make check's ladder).
QUICK_TESTS := 'golden_*' 'gdn_*' 'chunked_scalar_*' chunked_unaligned_q 'recurrent_Dk*' recurrent_unaligned_q layers_T0 \
	kernel_refusals recurrent_decode recurrent_odd_dims deltanet_single_chunk chunked_T1 chunked_gqa3_c32 \
	auto_long_B4 \
	recurrent_two_cols_odd
ifeq ($(COVERAGE),1)
  # -O0 warns differently (format-truncation): the real builds are the -Werror gate.
  # Atomic counters: test_threads launches from several threads at once, and
  # gcov derives uninstrumented arcs from the others, so a lost increment
  # would show a line as run that never ran (or the other way round).
  CFLAGS += -O0 --coverage -fprofile-update=atomic -Wno-error -Wno-format-truncation
  KFLAGS += -O0 --coverage -fprofile-update=atomic -Wno-error
  LINK   += --coverage
endif

# $(1): the ladder's part, run between the common runs and the report.
define coverage_run
	@$(MAKE) --no-print-directory BACKEND=cpu BUILD=$(COVERAGE_BUILD) COVERAGE=1 \
	    $(COVERAGE_BUILD)/test_deltanet $(COVERAGE_BUILD)/test_harness $(COVERAGE_BUILD)/test_threads \
	    $(COVERAGE_BUILD)/test_tuning
	@find $(COVERAGE_BUILD) -name '*.gcda' -delete
	@$(COVERAGE_BUILD)/test_harness > $(COVERAGE_BUILD)/harness.out 2>&1 || { cat $(COVERAGE_BUILD)/harness.out; exit 1; }
	@$(COVERAGE_BUILD)/test_threads > $(COVERAGE_BUILD)/threads.out 2>&1 || { cat $(COVERAGE_BUILD)/threads.out; exit 1; }
	@$(COVERAGE_BUILD)/test_tuning > $(COVERAGE_BUILD)/tuning.out 2>&1 || { cat $(COVERAGE_BUILD)/tuning.out; exit 1; }
	@$(COVERAGE_BUILD)/test_deltanet --env > /dev/null
	@$(COVERAGE_BUILD)/test_deltanet --bench --reps 1 --test compare_T1_B1 > $(COVERAGE_BUILD)/bench.out 2>&1 || \
	    { cat $(COVERAGE_BUILD)/bench.out; exit 1; }
	@$(1)
	@python3 tests/coverage.py --build $(COVERAGE_BUILD) --exempt tests/coverage-exempt.txt --gate kernels/ --gate phases/kernels/ \
	    --tsv $(COVERAGE_BUILD)/coverage.tsv kernels/ phases/kernels/ reference/
endef

coverage:
	$(call coverage_run,$(COVERAGE_BUILD)/test_deltanet > $(COVERAGE_BUILD)/ladder.out 2>&1 || \
	    { tail -n 30 $(COVERAGE_BUILD)/ladder.out; exit 1; }; echo "coverage: ladder $$(tail -n 1 $(COVERAGE_BUILD)/ladder.out)")

coverage-quick:
	$(call coverage_run,{ $(COVERAGE_BUILD)/test_deltanet --phase 1-7 && $(COVERAGE_BUILD)/test_deltanet --phase 8 \
	    $(foreach t,$(QUICK_TESTS),--test $(t)); } > $(COVERAGE_BUILD)/ladder.out 2>&1 || \
	    { tail -n 30 $(COVERAGE_BUILD)/ladder.out; exit 1; }; echo "coverage: quick rows $$(tail -n 1 $(COVERAGE_BUILD)/ladder.out)")
