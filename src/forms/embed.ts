// Embed snippets of a form: an HTML <form> that works with and without JavaScript, a React
// component, and a curl command. Pure functions of the form; every value interpolated into a
// snippet is escaped for the place it lands (HTML text, attribute, script, shell).
import type { FieldType } from './spam.js';
import {
  DEFAULT_ERROR_MESSAGE,
  DEFAULT_SUCCESS_MESSAGE,
  escapeHtml,
  safeRedirectUrl,
  scriptLiteral,
  shellQuote,
  type EmbedField,
  type EmbedForm,
} from './embed-common.js';

export * from './embed-common.js';
export { reactSnippet, componentName } from './embed-react.js';

/** The id of the snippet's <form>: unique per form, so two forms on one page stay apart. */
export function formElementId(uuid: string): string {
  return `hostplane-form-${uuid.replace(/[^a-zA-Z0-9-]/g, '')}`;
}

const INPUT_TYPES: Record<Exclude<FieldType, 'textarea' | 'select'>, string> = {
  text: 'text',
  email: 'email',
  tel: 'tel',
  number: 'number',
  url: 'url',
};

/** One field as a labelled control; the <label> wraps the control, so no element ids are needed. */
function fieldHtml(field: EmbedField): string {
  const attrs = [`name="${escapeHtml(field.name)}"`];
  if (field.required) attrs.push('required');
  if (field.placeholder !== null && field.type !== 'select') {
    attrs.push(`placeholder="${escapeHtml(field.placeholder)}"`);
  }
  let control: string;
  if (field.type === 'textarea') {
    control = `<textarea ${attrs.join(' ')} rows="5"></textarea>`;
  } else if (field.type === 'select') {
    const empty = escapeHtml(field.placeholder ?? 'Choose…');
    const options = (field.options ?? []).map(
      (option) => `<option value="${escapeHtml(option)}">${escapeHtml(option)}</option>`,
    );
    control = [`<select ${attrs.join(' ')}>`, `<option value="">${empty}</option>`, ...options, '</select>']
      .map((line, i, all) => (i === 0 || i === all.length - 1 ? line : `  ${line}`))
      .join('\n      ');
  } else {
    const extra =
      field.type === 'number' ? ' step="any"' : field.type === 'email' ? ' autocomplete="email"' : '';
    control = `<input type="${INPUT_TYPES[field.type]}" ${attrs.join(' ')}${extra}>`;
  }
  const mark = field.required ? ' <span aria-hidden="true">*</span>' : '';
  return [
    '  <p data-hostplane-field>',
    `    <label>${escapeHtml(field.label)}${mark}<br>`,
    `      ${control}`,
    '    </label>',
    '  </p>',
  ].join('\n');
}

/**
 * The inline script of the HTML snippet. It reaches the form's properties through the
 * prototypes, because a field named like one of them (`action`, `reset`, `querySelector`…)
 * shadows it on the element itself.
 */
function inlineScript(form: EmbedForm): string {
  const config = {
    id: formElementId(form.uuid),
    url: form.submissionUrl,
    successMessage: form.successMessage ?? DEFAULT_SUCCESS_MESSAGE,
    redirectUrl: safeRedirectUrl(form.redirectUrl),
    errorMessage: DEFAULT_ERROR_MESSAGE,
  };
  return `<script>
(function () {
  var config = ${scriptLiteral(config)};
  var script = document.currentScript;
  var prev = script && script.previousElementSibling;
  var form = prev && prev.tagName === 'FORM' ? prev : document.getElementById(config.id);
  if (!form) return;
  var find = function (selector) { return Element.prototype.querySelector.call(form, selector); };
  // When the form was displayed: sooner than 3 seconds before sending counts as a bot.
  find('input[name="_t_start"]').value = String(Math.floor(Date.now() / 1000));
  var status = find('[data-hostplane-status]');
  var button = find('button[type="submit"]');
  var show = function (text, isError) {
    status.textContent = text;
    status.hidden = false;
    status.setAttribute('data-state', isError ? 'error' : 'success');
  };
  EventTarget.prototype.addEventListener.call(form, 'submit', function (event) {
    if (!window.fetch || !window.FormData) return; // an old browser posts the form itself
    event.preventDefault();
    var data = Object.create(null); // a field may be named __proto__
    new FormData(form).forEach(function (value, key) { data[key] = String(value); });
    var start = Number(data._t_start);
    if (data._t_start && isFinite(start)) data._t_start = start; // the spec's integer
    button.disabled = true;
    fetch(config.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(data)
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (body) {
        if (!res.ok) throw new Error(body && typeof body.message === 'string' ? body.message : config.errorMessage);
        if (config.redirectUrl) { window.location.assign(config.redirectUrl); return; }
        var fields = Element.prototype.querySelectorAll.call(form, '[data-hostplane-field], [data-hostplane-actions]');
        for (var i = 0; i < fields.length; i++) fields[i].hidden = true;
        show(body && typeof body.message === 'string' ? body.message : config.successMessage, false);
      });
    }).catch(function (err) {
      button.disabled = false;
      show(err && err.message ? err.message : config.errorMessage, true);
    });
  });
})();
</script>`;
}

/**
 * A self-contained HTML form. With JavaScript it posts JSON with fetch and shows the success
 * message in place (or follows the redirect URL); without, the browser posts it as
 * application/x-www-form-urlencoded and `_t_start` stays empty.
 */
export function htmlSnippet(form: EmbedForm): string {
  const id = formElementId(form.uuid);
  return `<form id="${escapeHtml(id)}" class="hostplane-form" method="post" action="${escapeHtml(form.submissionUrl)}" accept-charset="UTF-8" aria-label="${escapeHtml(form.name)}">
${form.fields.map(fieldHtml).join('\n')}
  <div aria-hidden="true" style="position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden">
    <label>Leave this field empty <input type="text" name="_t_trap" value="" tabindex="-1" autocomplete="off"></label>
  </div>
  <input type="hidden" name="_t_start" value="">
  <p data-hostplane-actions><button type="submit">Send</button></p>
  <p data-hostplane-status role="status" aria-live="polite" hidden></p>
</form>
${inlineScript(form)}`;
}

/** An example value of each type that the submission endpoint accepts. */
export function exampleValue(field: EmbedField): string {
  switch (field.type) {
    case 'email':
      return 'jane@example.com';
    case 'tel':
      return '+15550100';
    case 'number':
      return '42';
    case 'url':
      return 'https://example.com';
    case 'select':
      return field.options?.[0] ?? '';
    case 'textarea':
      return 'Hello! This is a test message.';
    case 'text':
      return 'Jane Doe';
  }
}

/**
 * A curl command posting a valid JSON submission: example values, an empty honeypot, and a
 * `_t_start` ten seconds in the past, computed by the shell when the command runs.
 */
export function curlSnippet(form: EmbedForm): string {
  const data = Object.fromEntries(form.fields.map((field) => [field.name, exampleValue(field)]));
  const json = JSON.stringify({ ...data, _t_trap: '' });
  // The JSON closes with `,"_t_start":<shell arithmetic>}`; the arithmetic sits outside the quotes.
  const head = `${json.slice(0, -1)},"_t_start":`;
  return [
    `curl -sS -X POST ${shellQuote(form.submissionUrl)} \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -H 'Accept: application/json' \\`,
    `  --data-binary ${shellQuote(head)}"$(($(date +%s) - 10))"'}'`,
  ].join('\n');
}
