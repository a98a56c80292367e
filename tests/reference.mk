test-reference:
	@echo "reference test: not written yet"
