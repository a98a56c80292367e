# make test-report: result logs, --compare and --junit (tests/test_report.sh);
# build/cpu/test_failing gives it a real failing run, test_report_escape
# results with text to escape.
# make baseline: rewrite results/baseline-cpu.tsv, the CPU run that make
# test's ladder is compared against (statuses, missing tests, max_diff growth),
# only from a ladder that passes: a baseline must not hold failures.
.PHONY: test-report baseline
test-report:
	@$(MAKE) --no-print-directory BACKEND=cpu build/cpu/test_deltanet build/cpu/test_failing build/cpu/test_report_escape \
	    build/cpu/fault_write.so
	@sh tests/test_report.sh build/cpu/test_deltanet build/cpu/test_failing build/cpu/test_report_escape \
	    build/cpu/fault_write.so

baseline:
	@$(MAKE) --no-print-directory BACKEND=cpu build/cpu/test_deltanet
	@build/cpu/test_deltanet --log results/baseline-cpu.tsv.tmp > build/cpu/baseline-run.out 2>&1 || { \
	    tail -n 20 build/cpu/baseline-run.out; rm -f results/baseline-cpu.tsv.tmp; \
	    echo "baseline: the ladder failed, results/baseline-cpu.tsv left as it was"; exit 1; }
	@mv results/baseline-cpu.tsv.tmp results/baseline-cpu.tsv
	@echo "baseline: results/baseline-cpu.tsv rewritten ($$(tail -n 1 build/cpu/baseline-run.out))"

# Results with text to escape, for test_report.sh (tests/report_escape.c).
$(BUILD)/test_report_escape: $(BUILD)/tests/report_escape.o $(UNIT_OBJ)
	@echo "  LINK  $@"
	@$(LINK) $^ -o $@ $(LDLIBS)

# An LD_PRELOAD shim that turns writes to chosen paths into ENOSPC, for the
# full-disk cases of test_report.sh (tests/fault_write.c).
$(BUILD)/fault_write.so: tests/fault_write.c
	@mkdir -p $(dir $@)
	@echo "  CC    $@"
	@$(CC) -shared -fPIC -O2 $(WARN) -Werror $< -o $@ -ldl
