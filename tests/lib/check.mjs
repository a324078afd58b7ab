/*
 * check.mjs: what the JavaScript tests share with the C ones (lib/test.h):
 * check() counts a result and names a failure on stderr; summary() prints
 * "N passed, N failed" and gives the exit status.
 */
let passed = 0;
let failed = 0;

export function check(ok, what) {
  if (ok) {
    passed++;
  } else {
    failed++;
    console.error('  FAILED: ' + what);
  }
}

/* How many checks failed so far. */
export function failures() {
  return failed;
}

/* Prints the counts; returns the process's exit status. */
export function summary() {
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}
