// Shared view pieces: formatting in the household's time zone, the API's
// error envelope shown as it is, labelled form fields and dialogs.
import { html, useEffect, useRef } from '../vendor/preact-htm.js';
import { ApiError, Unreachable } from './api.js';

export { html };

let zone = 'UTC';
export function setTimeZone(tz) { zone = tz || 'UTC'; }
export function timeZone() { return zone; }

export function formatTime(iso) {
  if (!iso) return '';
  return new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', timeZone: zone }).format(new Date(iso));
}
export function formatDateTime(iso) {
  if (!iso) return '';
  return new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: zone }).format(new Date(iso));
}
export function formatDate(ymd) {
  if (!ymd) return '';
  return new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeZone: 'UTC' }).format(new Date(`${ymd}T12:00:00Z`));
}
// YYYY-MM-DD of an instant in the household's zone.
export function dayOf(iso) {
  const parts = new Intl.DateTimeFormat('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit', timeZone: zone }).formatToParts(new Date(iso));
  const get = (t) => parts.find((p) => p.type === t).value;
  return `${get('year')}-${get('month')}-${get('day')}`;
}

export function amount(value, unit) {
  if (value === null || value === undefined) return '';
  return `${value} ${unit || ''}`.trim();
}

export function ErrorBox({ error }) {
  if (!error) return null;
  if (error instanceof Unreachable) return html`<p class="error" role="alert">The server cannot be reached. Check the connection and try again.</p>`;
  const fields = error instanceof ApiError ? Object.entries(error.errors) : [];
  return html`<div class="error" role="alert">
    <p>${error.message}</p>
    ${fields.length > 0 && html`<ul>${fields.map(([field, messages]) => html`<li><strong>${field}</strong>: ${[].concat(messages).join('; ')}</li>`)}</ul>`}
  </div>`;
}

export function Field({ id, label, hint, children }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children}
    ${hint && html`<p class="hint" id=${`${id}-hint`}>${hint}</p>`}
  </div>`;
}

// A modal dialog: focus moves in when it opens and back when it closes.
export function Dialog({ title, onClose, children }) {
  const ref = useRef(null);
  useEffect(() => {
    const dialog = ref.current;
    const before = document.activeElement;
    if (dialog && !dialog.open) dialog.showModal();
    return () => { if (before && before.focus) before.focus(); };
  }, []);
  const id = `dialog-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return html`<dialog ref=${ref} aria-labelledby=${id} onClose=${onClose} onCancel=${(e) => { e.preventDefault(); onClose(); }}>
    <h2 id=${id}>${title}</h2>
    ${children}
  </dialog>`;
}

export function formValues(event) {
  event.preventDefault();
  return Object.fromEntries(new FormData(event.currentTarget).entries());
}

// Empty form fields mean "not given".
export function compact(object) {
  const out = {};
  for (const [k, v] of Object.entries(object)) if (v !== '' && v !== undefined) out[k] = v;
  return out;
}

export function Loading() { return html`<p role="status">Loading…</p>`; }

export const LARGE_TEXT_KEY = 'pillbox.large_text';
// A device setting, kept when signing out.
export function applyLargeText(on) {
  document.documentElement.classList.toggle('large', on);
  if (on) localStorage.setItem(LARGE_TEXT_KEY, '1');
  else localStorage.removeItem(LARGE_TEXT_KEY);
}
