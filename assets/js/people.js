// People and plans: each person with their age, schedules and direct
// assignments; add and edit a schedule of any type with its times and
// slots; pause with a reason and resume; the pause history; health events.
import { html, useState, useEffect } from '../vendor/preact-htm.js';
import { all, hh, post, request } from './api.js';
import { ErrorBox, Dialog, Loading, Field, formValues, compact, amount, formatDateTime, formatDate } from './ui.js';
import { UnitSelect } from './medicines.js';

const TYPES = [['daily', 'Every day'], ['every_other_day', 'Every other day'], ['multiple_daily', 'Several times a day'], ['weekly', 'On weekdays'], ['specific_dates', 'On dates'], ['tapering', 'Tapering steps'], ['prn', 'As needed']];
const SLOTS = ['morning', 'afternoon', 'evening', 'night'];
const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const PAUSE_REASONS = [['clinician_advice', 'Clinician advice'], ['side_effects', 'Side effects'], ['out_of_supply', 'Out of supply'], ['other', 'Other']];
const list = (text) => (text || '').split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
const today = () => new Date().toISOString().slice(0, 10);

// The schedule_config the API describes for each type, from the form.
function scheduleConfig(type, v, form) {
  if (type === 'prn') return { as_needed: true };
  const config = {};
  const times = list(v.times);
  const slots = SLOTS.filter((s) => form.querySelector(`[name="slot_${s}"]`)?.checked);
  if (type === 'tapering') {
    // One step per line: start date, end date, dose.
    config.taper_steps = (v.taper_steps || '').split('\n').map((line) => line.trim()).filter(Boolean).map((line) => {
      const [start_date, end_date, dose_amount] = line.split(/\s+/);
      return { start_date, end_date, dose_amount };
    });
  }
  if (times.length) config.times = times;
  if (slots.length) config.slots = slots;
  if (type === 'weekly') config.weekdays = WEEKDAYS.filter((d) => form.querySelector(`[name="day_${d}"]`)?.checked);
  if (type === 'specific_dates') config.dates = list(v.dates);
  return config;
}

function ScheduleForm({ schedule, person, medications, onSave, onCancel, error }) {
  const [type, setType] = useState(schedule ? schedule.schedule_type : 'daily');
  const c = (schedule && schedule.schedule_config) || {};
  return html`<form onSubmit=${(e) => {
    const form = e.currentTarget;
    const v = formValues(e);
    const body = {
      schedule_type: type,
      schedule_config: scheduleConfig(type, v, form),
      dose_amount: v.dose_amount,
      dose_unit: v.dose_unit,
      start_date: v.start_date,
      end_date: v.end_date || null,
      notes: v.notes || null,
    };
    if (!schedule) { body.person_id = person.id; body.medication_id = Number(v.medication_id); }
    onSave(body);
  }}>
    <${ErrorBox} error=${error} />
    ${!schedule && html`<${Field} id="sch-medication" label="Medicine"><select id="sch-medication" name="medication_id" required>
      ${medications.map((m) => html`<option value=${m.id}>${m.display_name}</option>`)}</select><//>`}
    <${Field} id="sch-type" label="When"><select id="sch-type" name="schedule_type" value=${type} onChange=${(e) => setType(e.currentTarget.value)}>
      ${TYPES.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select><//>
    <div class="grid2">
      <${Field} id="sch-amount" label="Dose"><input id="sch-amount" name="dose_amount" required inputmode="decimal" value=${schedule ? schedule.dose_amount : '1'} /><//>
      <${Field} id="sch-unit" label="Unit"><${UnitSelect} id="sch-unit" name="dose_unit" value=${schedule ? schedule.dose_unit : 'tablet'} /><//>
    </div>
    ${type !== 'prn' && html`
      <${Field} id="sch-times" label="Times (HH:MM, separated by commas)" hint="In the household's time zone."><input id="sch-times" name="times" value=${(c.times || []).join(', ')} aria-describedby="sch-times-hint" /><//>
      <fieldset><legend>Parts of the day (times from each person's reminder settings)</legend>
        ${SLOTS.map((s) => html`<div class="field inline"><input type="checkbox" id=${`slot-${s}`} name=${`slot_${s}`} checked=${(c.slots || []).includes(s)} /><label for=${`slot-${s}`}>${s}</label></div>`)}
      </fieldset>`}
    ${type === 'weekly' && html`<fieldset><legend>Weekdays</legend>
      ${WEEKDAYS.map((d) => html`<div class="field inline"><input type="checkbox" id=${`day-${d}`} name=${`day_${d}`} checked=${(c.weekdays || []).includes(d)} /><label for=${`day-${d}`}>${d}</label></div>`)}</fieldset>`}
    ${type === 'specific_dates' && html`<${Field} id="sch-dates" label="Dates (YYYY-MM-DD, separated by commas)"><input id="sch-dates" name="dates" value=${(c.dates || []).join(', ')} /><//>`}
    ${type === 'tapering' && html`<${Field} id="sch-steps" label="Steps: one per line, start end dose (2027-01-01 2027-01-07 2)"><textarea id="sch-steps" name="taper_steps" rows="4" value=${(c.taper_steps || []).map((s) => `${s.start_date} ${s.end_date} ${s.dose_amount}`).join('\n')}></textarea><//>`}
    <div class="grid2">
      <${Field} id="sch-start" label="From"><input id="sch-start" name="start_date" type="date" required value=${schedule ? schedule.start_date : today()} /><//>
      <${Field} id="sch-end" label="Until (optional)"><input id="sch-end" name="end_date" type="date" value=${schedule ? schedule.end_date || '' : ''} /><//>
    </div>
    <${Field} id="sch-notes" label="Notes (optional)"><input id="sch-notes" name="notes" value=${schedule ? schedule.notes || '' : ''} /><//>
    <div class="actions"><button type="submit" class="primary">Save schedule</button><button type="button" onClick=${onCancel}>Cancel</button></div>
  </form>`;
}

export function People() {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [dialog, setDialog] = useState(null);
  const [notice, setNotice] = useState(null);

  const reload = async () => {
    try {
      const [people, schedules, assignments, medications, pauses, events] = await Promise.all([
        all(hh('/people')), all(hh('/schedules')), all(hh('/person_medications')),
        all(hh('/medications')).catch(() => []), all(hh('/medication_pause_periods')), all(hh('/health_events')),
      ]);
      setData({ people: people.sort((a, b) => a.name.localeCompare(b.name)), schedules, assignments, medications, pauses, events });
    } catch (e) { setError(e); }
  };
  useEffect(() => { reload(); }, []);

  const run = async (work, message) => {
    try { await work(); setDialog(null); setError(null); setNotice(message); await reload(); } catch (e) { setError(e); }
  };

  if (!data) return html`<h1>People</h1>${error ? html`<${ErrorBox} error=${error} />` : html`<${Loading} />`}`;
  const medName = (id) => (data.medications.find((m) => m.id === id) || {}).display_name || 'Medicine';
  const typeName = (t) => (TYPES.find(([v]) => v === t) || [t, t])[1];

  const saveSchedule = (schedule, body) => run(async () => {
    if (schedule) {
      const { etag } = await request('GET', hh(`/schedules/${schedule.id}`));
      await request('PATCH', hh(`/schedules/${schedule.id}`), { body: { schedule: body }, headers: { 'If-Match': etag } });
    } else await post(hh('/schedules'), { schedule: body });
  }, 'Schedule saved.');

  const resume = (source) => run(async () => {
    await post(hh(`/medication_pause_periods/${source.current_pause_period.id}/resume`), {});
  }, 'Resumed.');

  const SourceCard = ({ source, kind }) => html`<li class="card source">
    <div class="row"><span class="name">${medName(source.medication_id)}</span>
      <span class="meta">${kind === 'schedule' ? typeName(source.schedule_type) : source.administration_kind === 'as_needed' ? 'As needed' : 'Routine'}</span></div>
    <p class="meta">${amount(source.dose_amount, source.dose_unit)}
      ${source.schedule_config && source.schedule_config.times ? ` at ${source.schedule_config.times.join(', ')}` : ''}
      ${source.schedule_config && source.schedule_config.slots ? ` · ${source.schedule_config.slots.join(', ')}` : ''}
      ${source.start_date ? ` · from ${formatDate(source.start_date)}` : ''}</p>
    ${source.current_pause_period && html`<p class="warning">Paused since ${formatDateTime(source.current_pause_period.started_at)}</p>`}
    <div class="actions">
      ${kind === 'schedule' && html`<button onClick=${() => setDialog({ kind: 'schedule', schedule: source })}>Edit<span class="sr-only"> schedule of ${medName(source.medication_id)}</span></button>`}
      ${source.current_pause_period
        ? html`<button onClick=${() => resume(source)}>Resume<span class="sr-only"> ${medName(source.medication_id)}</span></button>`
        : html`<button onClick=${() => setDialog({ kind: 'pause', source: { ...source, source_type: kind } })}>Pause<span class="sr-only"> ${medName(source.medication_id)}</span></button>`}
    </div>
  </li>`;

  return html`
    <h1>People</h1>
    ${notice && html`<p class="notice" role="status">${notice}</p>`}
    <${ErrorBox} error=${dialog ? null : error} />
    ${data.people.map((person) => {
      const schedules = data.schedules.filter((s) => s.person_id === person.id && !s.retired_at);
      const assignments = data.assignments.filter((a) => a.person_id === person.id && !a.retired_at);
      const pauses = data.pauses.filter((p) => p.person_id === person.id);
      const events = data.events.filter((e) => e.person_id === person.id);
      return html`<section class="card person" aria-labelledby=${`p-${person.id}`}>
        <h2 id=${`p-${person.id}`}>${person.name}${person.age !== null ? html` <span class="meta">(${person.age})</span>` : ''}</h2>
        <h3>Schedules</h3>
        ${schedules.length ? html`<ul class="cards">${schedules.map((s) => html`<${SourceCard} source=${s} kind="schedule" />`)}</ul>` : html`<p class="meta">None.</p>`}
        <div class="actions"><button onClick=${() => setDialog({ kind: 'schedule', person })}>Add a schedule<span class="sr-only"> for ${person.name}</span></button></div>
        <h3>Direct assignments</h3>
        ${assignments.length ? html`<ul class="cards">${assignments.map((a) => html`<${SourceCard} source=${a} kind="person_medication" />`)}</ul>` : html`<p class="meta">None.</p>`}
        <div class="actions"><button onClick=${() => setDialog({ kind: 'assignment', person })}>Add a direct assignment<span class="sr-only"> for ${person.name}</span></button></div>
        ${pauses.length > 0 && html`<h3>Pause history</h3><table><thead><tr><th scope="col">Medicine</th><th scope="col">Reason</th><th scope="col">From</th><th scope="col">Until</th></tr></thead><tbody>
          ${pauses.map((p) => { const src = [...data.schedules, ...data.assignments].find((s) => s.portable_id === p.source_id); return html`<tr><td>${src ? medName(src.medication_id) : ''}</td><td>${p.reason.replace(/_/g, ' ')}${p.note ? ` · ${p.note}` : ''}</td><td>${formatDateTime(p.started_at)}</td><td>${p.ended_at ? formatDateTime(p.ended_at) : 'now'}</td></tr>`; })}
        </tbody></table>`}
        <h3>Health events</h3>
        ${events.length ? html`<ul>${events.map((e) => html`<li>${formatDate(e.started_on)}: ${e.title}${e.severity ? ` (${e.severity})` : ''}</li>`)}</ul>` : html`<p class="meta">None.</p>`}
        <div class="actions"><button onClick=${() => setDialog({ kind: 'event', person })}>Add a health event<span class="sr-only"> for ${person.name}</span></button></div>
      </section>`;
    })}
    ${dialog && dialog.kind === 'schedule' && html`<${Dialog} title=${dialog.schedule ? 'Edit schedule' : 'Add a schedule'} onClose=${() => setDialog(null)}>
      <${ScheduleForm} schedule=${dialog.schedule} person=${dialog.person} medications=${data.medications} error=${error}
        onSave=${(body) => saveSchedule(dialog.schedule, body)} onCancel=${() => setDialog(null)} /><//>`}
    ${dialog && dialog.kind === 'assignment' && html`<${Dialog} title="Add a direct assignment" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => {
        const v = formValues(e);
        const body = compact({ person_id: dialog.person.id, medication_id: Number(v.medication_id), administration_kind: v.administration_kind, dose_amount: v.dose_amount, dose_unit: v.dose_unit, dose_cycle: v.dose_cycle, max_daily_doses: v.max_daily_doses ? Number(v.max_daily_doses) : undefined, min_hours_between_doses: v.min_hours_between_doses, notes: v.notes });
        run(() => post(hh('/person_medications'), { person_medication: body }), 'Direct assignment added.');
      }}>
        <${Field} id="pm-medication" label="Medicine"><select id="pm-medication" name="medication_id" required>${data.medications.map((m) => html`<option value=${m.id}>${m.display_name}</option>`)}</select><//>
        <${Field} id="pm-kind" label="Kind"><select id="pm-kind" name="administration_kind"><option value="routine">Routine (no set time)</option><option value="as_needed">As needed</option></select><//>
        <div class="grid2">
          <${Field} id="pm-amount" label="Dose"><input id="pm-amount" name="dose_amount" required inputmode="decimal" value="1" /><//>
          <${Field} id="pm-unit" label="Unit"><${UnitSelect} id="pm-unit" name="dose_unit" value="tablet" /><//>
        </div>
        <div class="grid2">
          <${Field} id="pm-max" label="Most doses per cycle (optional)"><input id="pm-max" name="max_daily_doses" type="number" min="1" /><//>
          <${Field} id="pm-cycle" label="Cycle"><select id="pm-cycle" name="dose_cycle"><option value="daily">Day</option><option value="weekly">Week</option><option value="monthly">Month</option></select><//>
        </div>
        <${Field} id="pm-gap" label="Hours between doses at least (optional)"><input id="pm-gap" name="min_hours_between_doses" inputmode="decimal" /><//>
        <${Field} id="pm-notes" label="Notes (optional)"><input id="pm-notes" name="notes" /><//>
        <div class="actions"><button type="submit" class="primary">Save</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'pause' && html`<${Dialog} title="Pause" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => { const v = formValues(e); run(() => post(hh('/medication_pause_periods'), { medication_pause_period: compact({ source_type: dialog.source.source_type, source_id: dialog.source.portable_id, reason: v.reason, note: v.note }) }), 'Paused.'); }}>
        <p>${medName(dialog.source.medication_id)}</p>
        <${Field} id="pause-reason" label="Reason"><select id="pause-reason" name="reason">${PAUSE_REASONS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select><//>
        <${Field} id="pause-note" label="Note (optional)"><input id="pause-note" name="note" /><//>
        <div class="actions"><button type="submit" class="primary">Pause</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'event' && html`<${Dialog} title="Add a health event" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => { const v = formValues(e); run(() => post(hh('/health_events'), { health_event: compact({ person_id: dialog.person.id, event_kind: v.event_kind, severity: v.severity, title: v.title, notes: v.notes, started_on: v.started_on, ended_on: v.ended_on }) }), 'Health event added.'); }}>
        <${Field} id="ev-title" label="What happened"><input id="ev-title" name="title" required /><//>
        <${Field} id="ev-kind" label="Kind"><select id="ev-kind" name="event_kind"><option value="illness">Illness</option><option value="suspected_side_effect">Suspected side effect</option></select><//>
        <${Field} id="ev-severity" label="Severity (optional)"><select id="ev-severity" name="severity"><option value="">—</option><option value="mild">Mild</option><option value="moderate">Moderate</option><option value="severe">Severe</option></select><//>
        <div class="grid2">
          <${Field} id="ev-start" label="Started on"><input id="ev-start" name="started_on" type="date" required value=${today()} /><//>
          <${Field} id="ev-end" label="Ended on (optional)"><input id="ev-end" name="ended_on" type="date" /><//>
        </div>
        <${Field} id="ev-notes" label="Notes (optional)"><textarea id="ev-notes" name="notes" rows="3"></textarea><//>
        <div class="actions"><button type="submit" class="primary">Save</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
  `;
}
