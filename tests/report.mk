# make test-report: result logs, --compare and --junit (tests/test_report.sh).
# make baseline: rewrite results/baseline-cpu.tsv, the CPU run that make
# test's ladder is compared against (statuses, missing tests, max_diff growth).
.PHONY: test-report baseline
test-report: build/cpu/test_deltanet
	@sh tests/test_report.sh build/cpu/test_deltanet

baseline:
	@$(MAKE) --no-print-directory BACKEND=cpu build/cpu/test_deltanet
	@build/cpu/test_deltanet --log results/baseline-cpu.tsv > /dev/null
