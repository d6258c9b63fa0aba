// The React embed snippet: a function component (plain JSX) a user pastes into a React app. The
// form's texts and fields travel as JSON literals, so no value is ever spliced into JSX itself.
import {
  DEFAULT_ERROR_MESSAGE,
  DEFAULT_SUCCESS_MESSAGE,
  safeRedirectUrl,
  scriptLiteral,
  type EmbedForm,
} from './embed-common.js';

/** `contact us!` → `ContactUsForm`: an ASCII identifier, starting with a capital as React needs. */
export function componentName(formName: string): string {
  const words = formName.match(/[A-Za-z0-9]+/g) ?? [];
  let name = words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
  if (name === '' || /^[0-9]/.test(name)) name = `Hostplane${name}`;
  return name.endsWith('Form') ? name : `${name}Form`;
}

/** A function component that posts the form as JSON with fetch; `_t_start` is set on mount. */
export function reactSnippet(form: EmbedForm): string {
  const fields = form.fields.map((f) => ({
    name: f.name,
    label: f.label,
    type: f.type,
    required: f.required,
    placeholder: f.placeholder,
    options: f.type === 'select' ? (f.options ?? []) : null,
  }));
  return `import { useEffect, useState } from 'react';

// A Hostplane form: posts to its submission URL as JSON.
const FORM_NAME = ${scriptLiteral(form.name)};
const SUBMISSION_URL = ${scriptLiteral(form.submissionUrl)};
const SUCCESS_MESSAGE = ${scriptLiteral(form.successMessage ?? DEFAULT_SUCCESS_MESSAGE)};
const ERROR_MESSAGE = ${scriptLiteral(DEFAULT_ERROR_MESSAGE)};
const REDIRECT_URL = ${scriptLiteral(safeRedirectUrl(form.redirectUrl))};
const FIELDS = ${scriptLiteral(fields, 2)};

const HIDDEN = { position: 'absolute', left: '-10000px', width: '1px', height: '1px', overflow: 'hidden' };

function Control({ field, value, onChange }) {
  const common = { name: field.name, required: field.required, value, onChange };
  const placeholder = field.placeholder ?? undefined;
  if (field.type === 'textarea') return <textarea {...common} rows={5} placeholder={placeholder} />;
  if (field.type === 'select') {
    return (
      <select {...common}>
        <option value="">{field.placeholder ?? 'Choose…'}</option>
        {field.options.map((option, i) => (
          <option key={i} value={option}>
            {option}
          </option>
        ))}
      </select>
    );
  }
  const step = field.type === 'number' ? 'any' : undefined;
  return <input {...common} type={field.type} placeholder={placeholder} step={step} />;
}

export default function ${componentName(form.name)}() {
  const [values, setValues] = useState(() => Object.fromEntries(FIELDS.map((f) => [f.name, ''])));
  const [trap, setTrap] = useState('');
  const [startedAt, setStartedAt] = useState(null);
  const [state, setState] = useState({ status: 'idle', message: '' });

  // When the form was displayed: sooner than 3 seconds before sending counts as a bot.
  useEffect(() => {
    setStartedAt(Math.floor(Date.now() / 1000));
  }, []);

  async function handleSubmit(event) {
    event.preventDefault();
    setState({ status: 'sending', message: '' });
    try {
      const res = await fetch(SUBMISSION_URL, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ ...values, _t_trap: trap, _t_start: startedAt ?? undefined }),
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) throw new Error(typeof body.message === 'string' ? body.message : ERROR_MESSAGE);
      if (REDIRECT_URL) {
        window.location.assign(REDIRECT_URL);
        return;
      }
      setState({ status: 'sent', message: typeof body.message === 'string' ? body.message : SUCCESS_MESSAGE });
    } catch (err) {
      setState({ status: 'error', message: err instanceof Error && err.message ? err.message : ERROR_MESSAGE });
    }
  }

  if (state.status === 'sent') return <p role="status">{state.message}</p>;

  return (
    <form onSubmit={handleSubmit} aria-label={FORM_NAME}>
      {FIELDS.map((field) => (
        <p key={field.name}>
          <label>
            {field.label}
            {field.required ? <span aria-hidden="true"> *</span> : null}
            <br />
            <Control
              field={field}
              value={values[field.name]}
              onChange={(e) => setValues((v) => ({ ...v, [field.name]: e.target.value }))}
            />
          </label>
        </p>
      ))}
      <div aria-hidden="true" style={HIDDEN}>
        <label>
          Leave this field empty
          <input type="text" name="_t_trap" value={trap} onChange={(e) => setTrap(e.target.value)} tabIndex={-1} autoComplete="off" />
        </label>
      </div>
      <button type="submit" disabled={state.status === 'sending'}>
        Send
      </button>
      {state.status === 'error' ? <p role="alert">{state.message}</p> : null}
    </form>
  );
}
`;
}
