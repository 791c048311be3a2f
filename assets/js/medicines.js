// Medicines and stock: the list with stock bars, the API's low and out
// flags and days left; add and edit a medication and its dosage options;
// adjust stock, mark ordered and received, remove stock with a reason.
// Every change sends the ETag of the latest read (If-Match).
import { html, useState, useEffect } from '../vendor/preact-htm.js';
import { all, hh, post, request, uuid } from './api.js';
import { ErrorBox, Dialog, Loading, Field, formValues, compact, amount, formatDate } from './ui.js';

export const UNITS = ['tablet', 'capsule', 'gummy', 'mg', 'ml', 'g', 'mcg', 'IU', 'spray', 'drop', 'sachet', 'pad'];
const ADJUST_REASONS = [['stock_count', 'Stock count'], ['correction', 'Correction'], ['found', 'Found'], ['other', 'Other']];
const REMOVAL_REASONS = [['expired', 'Expired'], ['damaged', 'Damaged'], ['lost', 'Lost'], ['disposed', 'Disposed'], ['returned_to_pharmacy', 'Returned to pharmacy'], ['other', 'Other']];

export function UnitSelect({ id, name, value, optional }) {
  return html`<select id=${id} name=${name} value=${value || ''}>
    ${optional && html`<option value="">—</option>`}
    ${UNITS.map((u) => html`<option value=${u}>${u}</option>`)}
  </select>`;
}

function StockBar({ medication }) {
  const supply = Number(medication.current_supply);
  const threshold = Number(medication.reorder_threshold || 0);
  const max = Math.max(supply, threshold * 3, 1);
  return html`<meter min="0" max=${max} low=${threshold || undefined} optimum=${max} value=${supply}
    aria-label=${`Stock of ${medication.display_name}`}>${medication.current_supply}</meter>`;
}

async function current(id) {
  const r = await request('GET', hh(`/medications/${id}`));
  return r.etag;
}

export function Medicines() {
  const [list, setList] = useState(null);
  const [options, setOptions] = useState([]);
  const [error, setError] = useState(null);
  const [dialog, setDialog] = useState(null);
  const [notice, setNotice] = useState(null);

  const reload = async () => {
    try {
      const [meds, opts] = await Promise.all([all(hh('/medications')), all(hh('/dosage_options'))]);
      setList(meds.sort((a, b) => a.display_name.localeCompare(b.display_name)));
      setOptions(opts);
    } catch (e) { setError(e); }
  };
  useEffect(() => { reload(); }, []);

  const run = async (work, message) => {
    try {
      await work();
      setDialog(null);
      setError(null);
      setNotice(message);
      await reload();
    } catch (e) { setError(e); }
  };

  if (!list) return html`<h1>Medicines</h1>${error ? html`<${ErrorBox} error=${error} />` : html`<${Loading} />`}`;

  const stockChange = (m, path, body, message) => run(async () => {
    const etag = await current(m.id);
    await request('PATCH', hh(`/medications/${m.id}/${path}`), { body, headers: { 'If-Match': etag } });
  }, message);

  return html`
    <h1>Medicines</h1>
    ${notice && html`<p class="notice" role="status">${notice}</p>`}
    <${ErrorBox} error=${dialog ? null : error} />
    <div class="actions"><button class="primary" onClick=${() => setDialog({ kind: 'medication' })}>Add a medicine</button></div>
    ${list.length === 0 && html`<p>No medicines yet.</p>`}
    <ul class="cards">${list.map((m) => html`<li class="card medication" data-id=${m.id}>
      <div class="row"><h2 class="name">${m.display_name}</h2>
        <span>${m.out_of_stock ? html`<span class="tag out">Out of stock</span>` : m.low_stock ? html`<span class="tag low">Low stock</span>` : ''}</span></div>
      <${StockBar} medication=${m} />
      <p class="meta"><span class="supply">${amount(m.current_supply, m.dose_unit)}</span> in stock
        ${m.days_until_out_of_stock !== null ? ` · about ${m.days_until_out_of_stock} days left` : ''}
        ${m.reorder_status === 'ordered' ? ` · ordered${m.reorder_expected_on ? `, expected ${formatDate(m.reorder_expected_on)}` : ''}` : ''}</p>
      ${options.filter((o) => o.medication_id === m.id).length > 0 && html`<h3>Dosage options</h3><ul class="options">
        ${options.filter((o) => o.medication_id === m.id).map((o) => html`<li>${amount(o.amount, o.unit)}${o.frequency ? ` ${o.frequency}` : ''}${o.description ? ` · ${o.description}` : ''}
          <button class="link" onClick=${() => setDialog({ kind: 'option', m, o })}>Edit<span class="sr-only"> dosage option ${amount(o.amount, o.unit)} of ${m.display_name}</span></button></li>`)}</ul>`}
      <div class="actions">
        <button onClick=${() => setDialog({ kind: 'adjust', m })}>Count stock<span class="sr-only"> of ${m.display_name}</span></button>
        ${m.reorder_status === 'ordered'
          ? html`<button onClick=${() => setDialog({ kind: 'received', m })}>Mark received<span class="sr-only"> ${m.display_name}</span></button>`
          : html`<button onClick=${() => setDialog({ kind: 'ordered', m })}>Mark ordered<span class="sr-only"> ${m.display_name}</span></button>`}
        <button onClick=${() => setDialog({ kind: 'remove', m })}>Remove stock<span class="sr-only"> of ${m.display_name}</span></button>
        <button onClick=${() => setDialog({ kind: 'medication', m })}>Edit<span class="sr-only"> ${m.display_name}</span></button>
        <button onClick=${() => setDialog({ kind: 'option', m })}>Add dosage option<span class="sr-only"> for ${m.display_name}</span></button>
      </div>
    </li>`)}</ul>
    ${dialog && dialog.kind === 'medication' && html`<${Dialog} title=${dialog.m ? 'Edit medicine' : 'Add a medicine'} onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => {
        const v = formValues(e);
        const body = { name: v.name, friendly_name: v.friendly_name || null, dose_amount: v.dose_amount || null, dose_unit: v.dose_unit || null, reorder_threshold: v.reorder_threshold || null };
        if (!dialog.m) body.current_supply = v.current_supply || '0';
        run(async () => {
          if (dialog.m) {
            const etag = await current(dialog.m.id);
            await request('PATCH', hh(`/medications/${dialog.m.id}`), { body: { medication: body }, headers: { 'If-Match': etag } });
          } else await post(hh('/medications'), { medication: body });
        }, dialog.m ? 'Medicine saved.' : 'Medicine added.');
      }}>
        <${Field} id="med-name" label="Name"><input id="med-name" name="name" required value=${dialog.m ? dialog.m.name : ''} /><//>
        <${Field} id="med-friendly" label="Everyday name (optional)"><input id="med-friendly" name="friendly_name" value=${dialog.m ? dialog.m.friendly_name || '' : ''} /><//>
        <div class="grid2">
          <${Field} id="med-amount" label="Usual dose"><input id="med-amount" name="dose_amount" inputmode="decimal" value=${dialog.m ? dialog.m.dose_amount || '' : ''} /><//>
          <${Field} id="med-unit" label="Unit"><${UnitSelect} id="med-unit" name="dose_unit" value=${dialog.m ? dialog.m.dose_unit : 'tablet'} optional /><//>
        </div>
        ${!dialog.m && html`<${Field} id="med-supply" label="In stock now"><input id="med-supply" name="current_supply" inputmode="decimal" value="0" /><//>`}
        <${Field} id="med-threshold" label="Reorder when stock falls to"><input id="med-threshold" name="reorder_threshold" inputmode="decimal" value=${dialog.m ? dialog.m.reorder_threshold || '' : ''} /><//>
        <div class="actions"><button type="submit" class="primary">Save</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'option' && html`<${Dialog} title=${dialog.o ? 'Edit dosage option' : 'Add a dosage option'} onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => {
        const v = formValues(e);
        const body = { amount: v.amount, unit: v.unit, frequency: v.frequency || null, description: v.description || null };
        run(async () => {
          if (dialog.o) {
            const { etag } = await request('GET', hh(`/dosage_options/${dialog.o.id}`));
            await request('PATCH', hh(`/dosage_options/${dialog.o.id}`), { body: { dosage_option: body }, headers: { 'If-Match': etag } });
          } else await post(hh('/dosage_options'), { dosage_option: { medication_id: dialog.m.id, ...body } });
        }, dialog.o ? 'Dosage option saved.' : 'Dosage option added.');
      }}>
        <p>${dialog.m.display_name}</p>
        <div class="grid2">
          <${Field} id="opt-amount" label="Amount"><input id="opt-amount" name="amount" required inputmode="decimal" value=${dialog.o ? dialog.o.amount : ''} /><//>
          <${Field} id="opt-unit" label="Unit"><${UnitSelect} id="opt-unit" name="unit" value=${dialog.o ? dialog.o.unit : dialog.m.dose_unit || 'tablet'} /><//>
        </div>
        <${Field} id="opt-frequency" label="How often (optional)"><input id="opt-frequency" name="frequency" value=${dialog.o ? dialog.o.frequency || '' : ''} /><//>
        <${Field} id="opt-description" label="Description (optional)"><input id="opt-description" name="description" value=${dialog.o ? dialog.o.description || '' : ''} /><//>
        <div class="actions"><button type="submit" class="primary">Save</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'adjust' && html`<${Dialog} title="Count stock" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => { const v = formValues(e); stockChange(dialog.m, 'adjust_inventory', { adjustment: compact(v) }, 'Stock updated.'); }}>
        <p>${dialog.m.display_name}: ${amount(dialog.m.current_supply, dialog.m.dose_unit)} now</p>
        <${Field} id="adj-quantity" label="Stock counted"><input id="adj-quantity" name="quantity" required inputmode="decimal" /><//>
        <${Field} id="adj-reason" label="Reason"><select id="adj-reason" name="reason">${ADJUST_REASONS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select><//>
        <${Field} id="adj-note" label="Note (optional)"><input id="adj-note" name="note" /><//>
        <div class="actions"><button type="submit" class="primary">Save</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'ordered' && html`<${Dialog} title="Mark ordered" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => { const v = formValues(e); stockChange(dialog.m, 'mark_as_ordered', { order_details: compact(v) }, 'Marked as ordered.'); }}>
        <p>${dialog.m.display_name}</p>
        <${Field} id="ord-quantity" label="Quantity ordered (optional)"><input id="ord-quantity" name="quantity" inputmode="decimal" /><//>
        <${Field} id="ord-supplier" label="Supplier (optional)"><input id="ord-supplier" name="supplier" /><//>
        <${Field} id="ord-expected" label="Expected on (optional)"><input id="ord-expected" name="expected_on" type="date" /><//>
        <div class="actions"><button type="submit" class="primary">Save</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'received' && html`<${Dialog} title="Mark received" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => { const v = formValues(e); stockChange(dialog.m, 'mark_as_received', { order_details: compact(v) }, 'Marked as received.'); }}>
        <p>${dialog.m.display_name}${dialog.m.reorder_quantity ? `: ${dialog.m.reorder_quantity} ordered` : ''}</p>
        <${Field} id="rec-quantity" label="Quantity received (optional when the order has one)"><input id="rec-quantity" name="quantity" inputmode="decimal" /><//>
        <div class="actions"><button type="submit" class="primary">Save</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
    ${dialog && dialog.kind === 'remove' && html`<${Dialog} title="Remove stock" onClose=${() => setDialog(null)}>
      <${ErrorBox} error=${error} />
      <form onSubmit=${(e) => {
        const v = formValues(e);
        const submission_id = dialog.submission || uuid();
        setDialog({ ...dialog, submission: submission_id });
        run(() => post(hh(`/medications/${dialog.m.id}/stock_removals`), { stock_removal: compact({ ...v, submission_id }) }), 'Stock removed.');
      }}>
        <p>${dialog.m.display_name}: ${amount(dialog.m.current_supply, dialog.m.dose_unit)} now</p>
        <${Field} id="rem-quantity" label="Quantity removed"><input id="rem-quantity" name="quantity" required inputmode="decimal" /><//>
        <${Field} id="rem-reason" label="Reason"><select id="rem-reason" name="reason">${REMOVAL_REASONS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select><//>
        <${Field} id="rem-note" label="Note (optional)"><input id="rem-note" name="note" /><//>
        <div class="actions"><button type="submit" class="primary">Remove</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form><//>`}
  `;
}
