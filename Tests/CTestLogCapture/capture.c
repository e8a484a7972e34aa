// Before any test runs (at load of the test binary), the library's log lines go to a recorder
// instead of standard error: a passing `swift test` prints only the test runner's output, and a
// test that provokes a log line checks it there (`capturedLogs`, SharedPrefsTestSupport).
extern void sharedprefs_tests_capture_logs(void);

__attribute__((constructor)) static void capture_logs(void) { sharedprefs_tests_capture_logs(); }
