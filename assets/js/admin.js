// Household administration for owners and administrators: members and
// roles, invitations (the link is shown once when email is off), person
// access grants, app tokens (shown once), the audit log and settings with
// the warnings the settings document carries.
import { html, useState, useEffect } from '../vendor/preact-htm.js';
import { all, get, hh, post, request, del } from './api.js';
import { ErrorBox, Dialog, Loading, Field, formValues, compact, formatDateTime } from './ui.js';

const ROLES = [['member', 'Member'], ['administrator', 'Administrator'], ['owner', 'Owner']];
const LEVELS = [['view', 'View'], ['record', 'Record doses'], ['manage', 'Manage']];
const RELATIONSHIPS = [['family_member', 'Family member'], ['parent', 'Parent'], ['carer', 'Carer'], ['professional', 'Professional']];

function Once({ title, value, onClose, children }) {
  return html`<${Dialog} title=${title} onClose=${onClose}>
    ${children}
    <p class="token" id="once-value">${value}</p>
    <div class="actions"><button class="primary" onClick=${() => navigator.clipboard && navigator.clipboard.writeText(value)}>Copy</button>
    <button onClick=${onClose}>Done</button></div><//>`;
}

export function Admin({ household }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [dialog, setDialog] = useState(null);
  const [notice, setNotice] = useState(null);

  const reload = async () => {
    try {
      const [members, invitations, grants, tokens, audit, settings, people] = await Promise.all([
        all(hh('/admin/memberships')), all(hh('/admin/invitations')), all(hh('/admin/person_access_grants')),
        all(hh('/admin/app_tokens')), get(hh('/admin/audit_logs?per_page=50')), get(hh('/admin/settings')), all(hh('/people')),
      ]);
      setData({ members, invitations, grants, tokens, audit: audit.data, settings: settings.data, people });
    } catch (e) { setError(e); }
  };
  useEffect(() => { reload(); }, []);
  const run = async (work, message) => {
    try { const out = await work(); setError(null); setNotice(message); await reload(); return out; } catch (e) { setError(e); return null; }
  };

  if (!data) return html`<h1>Household</h1>${error ? html`<${ErrorBox} error=${error} />` : html`<${Loading} />`}`;
  const memberName = (id) => { const m = data.members.find((x) => x.id === id); return m ? m.display_name || m.email : `#${id}`; };
  const personName = (id) => (data.people.find((p) => p.id === id) || {}).name || `#${id}`;
  const warnings = [
    ...(data.settings.warnings || []).map((w) => (typeof w === 'string' ? w : w.message)),
    ...data.settings.delivery_health.filter((c) => c.unavailable_reason || c.last_error).map((c) => `${c.channel.replace('_', ' ')}: ${c.unavailable_reason || c.last_error}`),
  ];

  const changeRole = (m, role) => run(async () => {
    await request('PATCH', hh(`/admin/memberships/${m.id}`), { body: { household_membership: { role } } });
  }, 'Role changed.');

  return html`
    <h1>Household</h1>
    ${notice && html`<p class="notice" role="status">${notice}</p>`}
    <${ErrorBox} error=${dialog ? null : error} />

    <h2>Settings</h2>
    ${warnings.length > 0 && html`<div class="warning" role="status"><p>Needs attention:</p><ul>${warnings.map((w) => html`<li>${w}</li>`)}</ul></div>`}
    <form onSubmit=${(e) => { const v = formValues(e); run(async () => { const { etag } = await request('GET', hh('/admin/settings')); return request('PATCH', hh('/admin/settings'), { headers: etag ? { 'If-Match': etag } : {}, body: { household: { name: v.name, time_zone: v.time_zone, app_token_max_age_days: Number(v.app_token_max_age_days), missed_dose_grace_minutes: Number(v.missed_dose_grace_minutes) } } }); }, 'Settings saved.'); }}>
      <${Field} id="set-name" label="Household name"><input id="set-name" name="name" required value=${data.settings.name} /><//>
      <${Field} id="set-tz" label="Time zone"><input id="set-tz" name="time_zone" required value=${data.settings.time_zone} /><//>
      <div class="grid2">
        <${Field} id="set-token-age" label="App tokens last at most (days)"><input id="set-token-age" name="app_token_max_age_days" type="number" min="1" value=${data.settings.app_token_max_age_days} /><//>
        <${Field} id="set-grace" label="Dose counts as missed after (minutes)"><input id="set-grace" name="missed_dose_grace_minutes" type="number" min="1" max="1440" value=${data.settings.missed_dose_grace_minutes} /><//>
      </div>
      <button type="submit" class="primary">Save settings</button>
    </form>

    <h2>Members</h2>
    <table><thead><tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>
      ${data.members.map((m) => html`<tr><td>${m.display_name || m.email}<br /><span class="meta">${m.email}${m.status !== 'active' ? ` · ${m.status}` : ''}</span></td>
        <td><label class="sr-only" for=${`role-${m.id}`}>Role of ${m.email}</label>
          <select id=${`role-${m.id}`} value=${m.role} disabled=${m.id === household.membership_id} onChange=${(e) => changeRole(m, e.currentTarget.value)}>
            ${ROLES.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select></td>
        <td>${m.id !== household.membership_id && html`<button onClick=${() => confirm('Remove this member from the household?') && run(() => del(hh(`/admin/memberships/${m.id}`)), 'Member removed.')}>Remove<span class="sr-only"> ${m.email}</span></button>`}</td></tr>`)}
    </tbody></table>

    <h2>Invitations</h2>
    <div class="actions"><button class="primary" onClick=${() => setDialog({ kind: 'invite' })}>Invite a member</button></div>
    ${data.invitations.length > 0 && html`<ul class="cards">${data.invitations.map((i) => html`<li class="card invitation"><div class="row"><span class="name">${i.email}</span><span class="meta">${i.role} · ${i.status}</span></div>
      <p class="meta">Expires ${formatDateTime(i.expires_at)}</p>
      <div class="actions"><button onClick=${() => run(() => del(hh(`/admin/invitations/${i.id}`)), 'Invitation withdrawn.')}>Withdraw<span class="sr-only"> invitation of ${i.email}</span></button></div></li>`)}</ul>`}

    <h2>Access to people</h2>
    <div class="actions"><button onClick=${() => setDialog({ kind: 'grant' })}>Give access</button></div>
    <table><thead><tr><th scope="col">Member</th><th scope="col">Person</th><th scope="col">Access</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>
      ${data.grants.map((g) => html`<tr><td>${memberName(g.membership_id)}</td><td>${personName(g.person_id)}</td><td>${g.access_level} (${g.relationship_type.replace('_', ' ')})</td>
        <td>${g.relationship_type !== 'self' && html`<button onClick=${() => run(() => del(hh(`/admin/person_access_grants/${g.id}`)), 'Access removed.')}>Remove<span class="sr-only"> access of ${memberName(g.membership_id)} to ${personName(g.person_id)}</span></button>`}</td></tr>`)}
    </tbody></table>

    <h2>App tokens</h2>
    <div class="actions"><button onClick=${() => setDialog({ kind: 'token' })}>Create an app token</button></div>
    ${data.tokens.length > 0 && html`<ul class="cards">${data.tokens.map((t) => html`<li class="card"><div class="row"><span class="name">${t.name}</span><span class="meta">${t.token_prefix}…</span></div>
      <p class="meta">${memberName(t.membership_id)} · expires ${formatDateTime(t.expires_at)}${t.last_used_at ? ` · last used ${formatDateTime(t.last_used_at)}` : ''}</p>
      <div class="actions"><button onClick=${() => run(() => del(hh(`/admin/app_tokens/${t.id}`)), 'Token revoked.')}>Revoke<span class="sr-only"> ${t.name}</span></button></div></li>`)}</ul>`}

    <h2>Audit log</h2>
    <table><thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Who</th></tr></thead><tbody>
      ${data.audit.map((a) => html`<tr><td>${formatDateTime(a.occurred_at)}</td><td>${a.event_type}</td><td>${a.actor_membership_id ? memberName(a.actor_membership_id) : 'server'}</td></tr>`)}
    </tbody></table>

    ${dialog && dialog.kind === 'invite' && html`<${Dialog} title="Invite a member" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${async (e) => {
        const v = formValues(e);
        const body = { email: v.email, role: v.role, inventory_management: v.inventory_management === 'on', person: { name: v.person_name, date_of_birth: v.date_of_birth } };
        const r = await run(() => post(hh('/admin/invitations'), { household_invitation: body }), 'Invitation created.');
        if (r) setDialog(r.body.data.accept_url ? { kind: 'link', url: r.body.data.accept_url } : null);
      }}>
        <${Field} id="inv-email" label="Their email"><input id="inv-email" name="email" type="email" required /><//>
        <${Field} id="inv-role" label="Role"><select id="inv-role" name="role">${ROLES.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select><//>
        <${Field} id="inv-name" label="Their name"><input id="inv-name" name="person_name" required /><//>
        <${Field} id="inv-dob" label="Their date of birth"><input id="inv-dob" name="date_of_birth" type="date" required /><//>
        <div class="field inline"><input type="checkbox" id="inv-inventory" name="inventory_management" /><label for="inv-inventory">May manage medicine stock</label></div>
        <div class="actions"><button type="submit" class="primary">Invite</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'link' && html`<${Once} title="Invitation link" value=${dialog.url} onClose=${() => setDialog(null)}>
      <p>Email is not set up on this server, so send this link yourself. It is shown only now.</p><//>`}
    ${dialog && dialog.kind === 'grant' && html`<${Dialog} title="Give access to a person" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${async (e) => {
        const v = formValues(e);
        const ok = await run(() => post(hh('/admin/person_access_grants'), { person_access_grant: compact({ membership_id: Number(v.membership_id), person_id: Number(v.person_id), access_level: v.access_level, relationship_type: v.relationship_type }) }), 'Access given.');
        if (ok) setDialog(null);
      }}>
        <${Field} id="gr-member" label="Member"><select id="gr-member" name="membership_id">${data.members.map((m) => html`<option value=${m.id}>${m.display_name || m.email}</option>`)}</select><//>
        <${Field} id="gr-person" label="Person"><select id="gr-person" name="person_id">${data.people.map((p) => html`<option value=${p.id}>${p.name}</option>`)}</select><//>
        <${Field} id="gr-level" label="Access"><select id="gr-level" name="access_level">${LEVELS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select><//>
        <${Field} id="gr-rel" label="Relationship"><select id="gr-rel" name="relationship_type">${RELATIONSHIPS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select><//>
        <div class="actions"><button type="submit" class="primary">Give access</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'token' && html`<${Dialog} title="Create an app token" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${async (e) => {
        const v = formValues(e);
        const r = await run(() => post(hh('/admin/app_tokens'), { api_app_token: compact({ name: v.name, max_age_days: v.max_age_days ? Number(v.max_age_days) : undefined }) }), 'Token created.');
        if (r) setDialog({ kind: 'secret', value: r.body.data.token });
      }}>
        <${Field} id="tok-name" label="Name (where it is used)"><input id="tok-name" name="name" required maxlength="100" /><//>
        <${Field} id="tok-age" label="Days until it expires (optional)"><input id="tok-age" name="max_age_days" type="number" min="1" /><//>
        <div class="actions"><button type="submit" class="primary">Create</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'secret' && html`<${Once} title="Your new app token" value=${dialog.value} onClose=${() => setDialog(null)}>
      <p>Copy it now: it is shown only once.</p><//>`}
  `;
}
