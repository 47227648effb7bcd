// Posting on a runtime port that may have closed under us: the worker's port to the native
// host and the panel's port to the worker both go away without warning (host exit, worker
// stop), and a closed port throws. Callers keep what they sent when this says false.

/** Posts `message` on `port`; false when there is no port or it has closed. */
export function postIfOpen(port, message) {
  if (!port) return false;
  try {
    port.postMessage(message);
    return true;
  } catch {
    return false;
  }
}
