// Today: for each person the member may view, the day's expected doses in
// time order (listDoseOccurrences), as-needed medicines with the next time
// the API allows, and what was taken. Everything shown is what the API
// answered; the only thing the page adds is the "waiting to send" state of
// writes queued while offline.
import { html, useState, useEffect } from '../vendor/preact-htm.js';
import { get, all, hh, post, request, uuid, Unreachable } from './api.js';
import { enqueue, pending, onQueueChange, saveDay, savedDay, flush } from './offline.js';
import { ErrorBox, Dialog, Loading, formatTime, formatDateTime, formatDate, amount, dayOf, setTimeZone, formValues } from './ui.js';

const NEXT_KEY = 'next_allowed';

async function loadDay() {
  const [doses, people, schedules, assignments, medications, takes] = await Promise.all([
    get(hh('/dose_occurrences')),
    all(hh('/people')),
    all(hh('/schedules')),
    all(hh('/person_medications')),
    all(hh('/medications')).catch(() => []),
    all(hh(`/medication_takes?from=${encodeURIComponent(new Date(Date.now() - 36 * 3600e3).toISOString())}`)),
  ]);
  return { doses: doses.data, meta: doses.meta, people, schedules, assignments, medications, takes, loadedAt: new Date().toISOString() };
}

function nextAllowed() {
  try { return JSON.parse(localStorage.getItem(`pillbox.${NEXT_KEY}`)) || {}; } catch { return {}; }
}
function rememberNextAllowed(source, at) {
  const map = nextAllowed();
  map[source] = at;
  localStorage.setItem(`pillbox.${NEXT_KEY}`, JSON.stringify(map));
}

function takeOperation(source_type, source_id, occurrence_key, client_uuid, taken_at) {
  const attributes = { source_type, source_id, taken_at, client_uuid };
  if (occurrence_key) attributes.occurrence_key = occurrence_key;
  return { action: 'create', resource_type: 'medication_take', attributes };
}

export function Today() {
  const [day, setDay] = useState(null);
  const [offline, setOffline] = useState(false);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState(null);
  const [confirm, setConfirm] = useState(null);
  const [notTaken, setNotTaken] = useState(null);
  const [queued, setQueued] = useState(pending());

  const reload = async () => {
    try {
      const loaded = await loadDay();
      setTimeZone(loaded.meta.time_zone);
      saveDay(loaded);
      setDay(loaded);
      setOffline(false);
      setError(null);
    } catch (e) {
      if (e instanceof Unreachable) {
        const saved = savedDay();
        if (saved) { setTimeZone(saved.meta.time_zone); setDay(saved); }
        setOffline(true);
      } else setError(e);
    }
  };

  useEffect(() => { reload(); }, []);
  useEffect(() => onQueueChange((items) => { setQueued(items); if (!items.length) reload(); }), []);

  if (!day) return html`<h1>Today</h1>${error ? html`<${ErrorBox} error=${error} />` : offline ? html`<p class="notice">The server cannot be reached and nothing was saved on this device yet.</p>` : html`<${Loading} />`}`;

  const record = async (source_type, source_id, occurrence_key, label) => {
    setConfirm(null);
    const client_uuid = uuid();
    const taken_at = new Date().toISOString();
    try {
      const r = await post(hh('/medication_takes'), { medication_take: { source_type, source_id, taken_at, occurrence_key: occurrence_key || null, client_uuid } });
      const meta = r.body.meta;
      if (meta.next_dose_allowed_at) rememberNextAllowed(source_id, meta.next_dose_allowed_at);
      setNotice({ kind: meta.warnings.length ? 'warning' : 'notice', text: `Recorded: ${label}.`, warnings: meta.warnings.map((w) => w.message), next: meta.next_dose_allowed_at });
      await reload();
    } catch (e) {
      if (e instanceof Unreachable) {
        enqueue(takeOperation(source_type, source_id, occurrence_key, client_uuid, taken_at), { kind: 'take', occurrence_key, source_id, label, at: taken_at });
        setOffline(true);
        setNotice({ kind: 'notice', text: `Saved on this device: ${label}. Waiting to send.` });
      } else setError(e);
    }
  };

  const tap = (dose) => {
    const label = dose.medication_display_name;
    const source = dose.source_portable_id;
    if (dose.warnings.length) setConfirm({ dose, label, warnings: dose.warnings });
    else record(dose.source_type, source, dose.occurrence_key, label);
  };

  const sendOutcome = async (operations) => {
    const r = await request('POST', hh('/sync/batches'), { body: { batch: { operations } }, headers: { 'Idempotency-Key': uuid() } });
    return r.body.data.results;
  };

  const markNotTaken = async (dose, reason) => {
    setNotTaken(null);
    const op = { action: 'create', resource_type: 'medication_dose_occurrence', attributes: { source_type: dose.source_type, source_id: dose.source_portable_id, occurrence_key: dose.occurrence_key, outcome: 'not_taken', reason: reason || null } };
    try {
      await sendOutcome([op]);
      setNotice({ kind: 'notice', text: `Marked not taken: ${dose.medication_display_name}.` });
      await reload();
    } catch (e) {
      if (e instanceof Unreachable) {
        enqueue(op, { kind: 'not_taken', occurrence_key: dose.occurrence_key, label: dose.medication_display_name });
        setOffline(true);
        setNotice({ kind: 'notice', text: 'Saved on this device. Waiting to send.' });
      } else setError(e);
    }
  };

  // Undo of "not taken": the same decision again answers the saved
  // outcome's id and ETag, which the reopen then names.
  const undoNotTaken = async (dose) => {
    try {
      const [saved] = await sendOutcome([{ action: 'create', resource_type: 'medication_dose_occurrence', attributes: { source_type: dose.source_type, source_id: dose.source_portable_id, occurrence_key: dose.occurrence_key, outcome: 'not_taken', reason: dose.reason } }]);
      await sendOutcome([{ action: 'update', resource_type: 'medication_dose_occurrence', id: saved.record_portable_id, if_match: saved.etag, attributes: { outcome: 'open' } }]);
      setNotice({ kind: 'notice', text: `Reopened: ${dose.medication_display_name}.` });
      await reload();
    } catch (e) { setError(e); }
  };

  const waiting = new Set(queued.map((q) => q.label && q.label.occurrence_key).filter(Boolean));
  const people = day.people.slice().sort((a, b) => a.name.localeCompare(b.name));
  const medName = (id) => (day.medications.find((m) => m.id === id) || {}).display_name || 'Medicine';
  const next = nextAllowed();
  const asNeeded = [
    ...day.schedules.filter((s) => s.schedule_type === 'prn' && s.active && !s.retired_at && !s.current_pause_period).map((s) => ({ ...s, source_type: 'schedule' })),
    ...day.assignments.filter((a) => a.administration_kind === 'as_needed' && a.active && !a.retired_at && !a.current_pause_period).map((a) => ({ ...a, source_type: 'person_medication' })),
  ];
  const todayTakes = day.takes.filter((t) => dayOf(t.taken_at) === day.meta.date);
  const takenAt = (dose) => (day.takes.find((t) => t.id === dose.medication_take_id) || {}).taken_at;

  return html`
    <h1>Today</h1>
    <p class="meta">${formatDate(day.meta.date)} · times in ${day.meta.time_zone}</p>
    ${offline && html`<p class="warning" role="status">Offline: showing the day as loaded at ${formatDateTime(day.loadedAt)}. Takes are saved on this device and sent when the server is back.</p>`}
    ${queued.length > 0 && html`<div class="notice" role="status" id="waiting"><p class="pending">Waiting to send: ${queued.length}</p>
      <ul>${queued.map((q) => html`<li>${(q.label && q.label.label) || 'Change'}${q.label && q.label.at ? ` at ${formatTime(q.label.at)}` : ''}</li>`)}</ul>
      <button onClick=${() => flush().catch(setError)}>Send now</button></div>`}
    ${notice && html`<div class=${notice.kind} role="status"><p>${notice.text}</p>
      ${notice.warnings && notice.warnings.length > 0 && html`<ul>${notice.warnings.map((w) => html`<li>${w}</li>`)}</ul>`}
      ${notice.next && html`<p>Next dose allowed from ${formatTime(notice.next)}.</p>`}</div>`}
    <${ErrorBox} error=${error} />
    ${people.length === 0 && html`<p>There is nobody you may see yet.</p>`}
    ${people.map((person) => {
      const doses = day.doses.filter((d) => d.person_id === person.id)
        .sort((a, b) => (a.scheduled_at || '9999').localeCompare(b.scheduled_at || '9999') || a.position - b.position);
      const prn = asNeeded.filter((s) => s.person_id === person.id);
      const prnTakes = todayTakes.filter((t) => t.person_id === person.id && !t.occurrence_key);
      return html`<section class="person" aria-labelledby=${`person-${person.id}`}>
        <h2 id=${`person-${person.id}`}>${person.name}</h2>
        ${doses.length === 0 && prn.length === 0 && html`<p class="meta">No doses today.</p>`}
        ${doses.length > 0 && html`<ul class="cards">${doses.map((dose) => html`<li class="card dose" data-outcome=${dose.outcome}>
          <div class="row"><span class="name">${dose.medication_display_name}</span>
            <span class="meta">${dose.scheduled_at ? formatTime(dose.scheduled_at) : 'Any time today'}</span></div>
          <p class="meta">${amount(dose.dose_amount, dose.dose_unit)}</p>
          ${dose.warnings.length > 0 && html`<ul class="warning">${dose.warnings.map((w) => html`<li>${w}</li>`)}</ul>`}
          ${waiting.has(dose.occurrence_key) ? html`<p class="pending">Waiting to send</p>`
            : dose.outcome === 'taken' ? html`<p><span class="tag taken">Taken</span>${takenAt(dose) ? ` at ${formatTime(takenAt(dose))}` : ''}</p>`
            : dose.outcome === 'not_taken' ? html`<p><span class="tag not_taken">Not taken</span>${dose.reason ? ` · ${dose.reason}` : ''}</p>
                <div class="actions"><button onClick=${() => undoNotTaken(dose)}>Undo not taken<span class="sr-only"> ${dose.medication_display_name}</span></button></div>`
            : html`<div class="actions">
                <button class="primary" onClick=${() => tap(dose)}>Take<span class="sr-only"> ${dose.medication_display_name}</span></button>
                <button onClick=${() => setNotTaken(dose)}>Not taken<span class="sr-only"> ${dose.medication_display_name}</span></button></div>`}
        </li>`)}</ul>`}
        ${prn.length > 0 && html`<h3>As needed</h3><ul class="cards">${prn.map((s) => {
          const label = medName(s.medication_id);
          const nextAt = next[s.portable_id];
          const taken = prnTakes.filter((t) => t.source_portable_id === s.portable_id);
          return html`<li class="card as-needed">
            <div class="row"><span class="name">${label}</span><span class="meta">${amount(s.dose_amount, s.dose_unit)}</span></div>
            ${taken.length > 0 && html`<p class="meta">Taken today at ${taken.map((t) => formatTime(t.taken_at)).join(', ')}</p>`}
            ${nextAt && new Date(nextAt) > new Date() && html`<p class="warning">Next dose allowed from ${formatTime(nextAt)}</p>`}
            <div class="actions"><button class="primary" onClick=${() => record(s.source_type, s.portable_id, null, label)}>Take now<span class="sr-only"> ${label}</span></button></div>
          </li>`;
        })}</ul>`}
      </section>`;
    })}
    ${confirm && html`<${Dialog} title="Before you record this dose" onClose=${() => setConfirm(null)}>
      <ul class="warning">${confirm.warnings.map((w) => html`<li>${w}</li>`)}</ul>
      <div class="actions"><button class="primary" onClick=${() => record(confirm.dose.source_type, confirm.dose.source_portable_id, confirm.dose.occurrence_key, confirm.label)}>Record it anyway</button>
      <button onClick=${() => setConfirm(null)}>Cancel</button></div>
    <//>`}
    ${notTaken && html`<${Dialog} title="Not taken" onClose=${() => setNotTaken(null)}>
      <form onSubmit=${(e) => markNotTaken(notTaken, formValues(e).reason)}>
        <div class="field"><label for="not-taken-reason">Reason</label>
          <select id="not-taken-reason" name="reason">
            <option>Refused</option><option>Asleep</option><option>Felt unwell</option><option>Not available</option><option>Other</option>
          </select></div>
        <div class="actions"><button type="submit" class="primary">Save as not taken</button>
        <button type="button" onClick=${() => setNotTaken(null)}>Cancel</button></div>
      </form>
    <//>`}
  `;
}
