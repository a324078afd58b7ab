/*
 * proc.mjs: stopping a child process the JavaScript tests started.
 *
 * stop() sends SIGTERM and resolves once the process has exited (SIGKILL
 * after 10 s), so a test removes the folders a server writes into (its
 * search index under the vault's .quire/) only when nothing writes there.
 */
export function stop(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const hard = setTimeout(() => proc.kill('SIGKILL'), 10000);
    proc.once('exit', () => { clearTimeout(hard); resolve(); });
    proc.kill('SIGTERM');
  });
}
