// The offline contract: writes made while the server cannot be reached
// wait in localStorage and are sent later as ONE sync batch with an
// Idempotency-Key. The key is fixed when a batch is first sent and kept
// until the server answers, so a retry after a lost answer is applied
// once. The last loaded day is kept too, so Today stays readable offline.
import { request, hh, household, uuid, Unreachable, ApiError } from './api.js';

const prefix = () => `pillbox.${household()}.`;
const read = (name, fallback) => { try { return JSON.parse(localStorage.getItem(prefix() + name)) ?? fallback; } catch { return fallback; } };
const write = (name, value) => localStorage.setItem(prefix() + name, JSON.stringify(value));
const listeners = new Set();

export function onQueueChange(fn) { listeners.add(fn); return () => listeners.delete(fn); }
function changed() { for (const fn of listeners) fn(pending()); }

// Operations waiting, each with a label for the "waiting to send" list.
export function pending() {
  const sending = read('sending', null);
  return [...(sending ? sending.items : []), ...read('queue', [])];
}

export function enqueue(operation, label) {
  write('queue', [...read('queue', []), { operation, label }]);
  changed();
}

let flushing = null;
export function flush() {
  if (!flushing) flushing = send().finally(() => { flushing = null; });
  return flushing;
}

async function send() {
  if (!household()) return { sent: 0 };
  let batch = read('sending', null);
  if (!batch) {
    const items = read('queue', []);
    if (!items.length) return { sent: 0 };
    batch = { key: uuid(), items };
    write('sending', batch);
    write('queue', []);
  }
  try {
    await request('POST', hh('/sync/batches'), {
      body: { batch: { operations: batch.items.map((i) => i.operation) } },
      headers: { 'Idempotency-Key': batch.key },
    });
  } catch (e) {
    if (e instanceof Unreachable) return { sent: 0, offline: true };
    // The server refused the batch as a whole: nothing of it was applied,
    // and sending it again would be refused again.
    localStorage.removeItem(prefix() + 'sending');
    write('failed', { at: new Date().toISOString(), message: e instanceof ApiError ? e.message : String(e), items: batch.items });
    changed();
    throw e;
  }
  localStorage.removeItem(prefix() + 'sending');
  changed();
  return { sent: batch.items.length };
}

export function lastFailure() { return read('failed', null); }
export function clearFailure() { localStorage.removeItem(prefix() + 'failed'); changed(); }

export function saveDay(day) { write('day', day); }
export function savedDay() { return read('day', null); }

// A shared family tablet: signing out leaves nothing of the household behind.
export function clearAll() {
  for (const key of Object.keys(localStorage)) {
    if (key.startsWith('pillbox.') && key !== 'pillbox.large_text') localStorage.removeItem(key);
  }
}

export function startFlushing() {
  addEventListener('online', () => flush().catch(() => {}));
  setInterval(() => { if (pending().length) flush().catch(() => {}); }, 5000);
}
