test-report:
	@echo "report tests: not written yet"
