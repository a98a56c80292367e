/* build/cpu/test_report_escape DIR: writes DIR/escape.xml and DIR/escape.tsv
 * from one failing and one passing result whose name, variant, shape and
 * message hold what XML and a tab-separated log must not take raw (markup
 * characters, quotes, tabs, line breaks, control characters, UTF-8).
 * tests/test_report.sh validates the XML and reads the log back. No real
 * test produces such text, so this is the only way to reach that code. */
#include "../harness/internal.h"
#include "../phases/phases.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_report_escape DIR\n");
        return 2;
    }
    static const Test failing = {.phase = 3, .name = "odd<name>&\"'", .variant = "v>1", .tol = {0.5, 0.25, 0}};
    static const Test passing = {.phase = 3, .name = "odd<name>&\"'", .variant = "passing", .tol = {0.5, 0.25, 0}};
    static TestResult r[2];
    r[0].test = &failing;
    snprintf(r[0].shape, sizeof r[0].shape, "shape\twith tabs <&>\r");
    snprintf(r[0].msg, sizeof r[0].msg, "line 1\nline 2 \x01\x1b[31m \"quoted\" & <tag> 5 \xc2\xb5s");
    r[1] = r[0];
    r[1].test = &passing;
    r[1].passed = r[1].compared = true;
    r[1].max_diff = 1e-7;
    registry_use(ladder_suite()); /* the log's first line names its program */
    Options o = {.seed = DEFAULT_SEED};
    char xml[1024], log[1024];
    snprintf(xml, sizeof xml, "%s/escape.xml", argv[1]);
    snprintf(log, sizeof log, "%s/escape.tsv", argv[1]);
    return write_junit(xml, r, 2) != 0 || write_log(log, &o, r, 2) != 0;
}
