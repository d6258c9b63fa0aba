import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import {
  componentName,
  curlSnippet,
  DEFAULT_SUCCESS_MESSAGE,
  formElementId,
  htmlSnippet,
  reactSnippet,
  type EmbedField,
  type EmbedForm,
} from '../../../src/forms/embed.js';

const field = (f: Partial<EmbedField> & Pick<EmbedField, 'name' | 'type'>): EmbedField => ({
  label: f.name,
  required: false,
  placeholder: null,
  options: null,
  ...f,
});

const plainForm: EmbedForm = {
  uuid: '5b0c2a0e-6f0a-4c1e-9d7e-0a1b2c3d4e5f',
  name: 'Contact us',
  submissionUrl: 'http://localhost:8080/f/5b0c2a0e-6f0a-4c1e-9d7e-0a1b2c3d4e5f',
  successMessage: 'Thanks, we will write back.',
  redirectUrl: null,
  fields: [
    field({ name: 'name', label: 'Your name', type: 'text', required: true, placeholder: 'Jane' }),
    field({ name: 'email', label: 'Email', type: 'email', required: true }),
    field({ name: 'phone', label: 'Phone', type: 'tel' }),
    field({ name: 'age', label: 'Age', type: 'number' }),
    field({ name: 'site', label: 'Website', type: 'url' }),
    field({ name: 'topic', label: 'Topic', type: 'select', required: true, options: ['Sales', 'Support'] }),
    field({ name: 'message', label: 'Message', type: 'textarea', placeholder: 'Say hi' }),
  ],
};

const HOSTILE = `</script><img src=x onerror=alert(1)>"'&amp;<!--\u2028`;
const hostileForm: EmbedForm = {
  uuid: 'a1b2c3d4-0000-4000-8000-000000000001"><script>',
  name: `Evil ${HOSTILE}`,
  submissionUrl: 'http://localhost:8080/f/a1b2c3d4-0000-4000-8000-000000000001',
  successMessage: `Done ${HOSTILE}`,
  redirectUrl: null,
  fields: [
    field({ name: `n${HOSTILE}`, label: `L${HOSTILE}`, type: 'text', placeholder: `P${HOSTILE}` }),
    field({ name: "it's", label: 'Quote', type: 'select', options: [`O${HOSTILE}`, 'b'] }),
    field({ name: 'action', label: 'Shadows form.action', type: 'text' }),
    field({ name: '__proto__', label: 'Proto', type: 'textarea' }),
  ],
};

// --- a small tokenizer for the HTML part (attribute values are always double-quoted) ----------

interface Tag {
  name: string;
  closing: boolean;
  attrs: Record<string, string>;
}

const decode = (s: string): string =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&amp;/g, '&');

/** Splits the snippet into its HTML (before <script>) and the script's source. */
function split(snippet: string): { html: string; script: string } {
  const open = snippet.indexOf('<script>');
  const close = snippet.indexOf('</script>');
  expect(open).toBeGreaterThan(0);
  expect(snippet.indexOf('<script', open + 1)).toBe(-1); // exactly one script element
  expect(snippet.indexOf('</script', close + 1)).toBe(-1);
  expect(snippet.slice(close)).toBe('</script>');
  return { html: snippet.slice(0, open), script: snippet.slice(open + '<script>'.length, close) };
}

function tokenize(html: string): { tags: Tag[]; text: string[] } {
  const tags: Tag[] = [];
  const text: string[] = [];
  const pattern = /<(\/?)([a-zA-Z]+)((?:\s+[a-zA-Z-]+(?:="[^"]*")?)*)\s*>|([^<]+)/gy;
  let m: RegExpExecArray | null;
  let consumed = 0;
  while ((m = pattern.exec(html)) !== null) {
    consumed = pattern.lastIndex;
    if (m[4] !== undefined) {
      if (m[4].trim()) text.push(decode(m[4].trim()));
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of m[3]!.matchAll(/([a-zA-Z-]+)(?:="([^"]*)")?/g))
      attrs[a[1]!.toLowerCase()] = decode(a[2] ?? '');
    tags.push({ name: m[2]!.toLowerCase(), closing: m[1] === '/', attrs });
  }
  expect(consumed, `unparsed HTML from: ${html.slice(consumed, consumed + 80)}`).toBe(html.length);
  return { tags, text };
}

const opening = (tags: Tag[], name: string) => tags.filter((t) => t.name === name && !t.closing);
const controlNamed = (tags: Tag[], name: string) =>
  tags.find((t) => !t.closing && ['input', 'select', 'textarea'].includes(t.name) && t.attrs.name === name);

function scriptConfig(script: string): Record<string, unknown> {
  const line = /var config = (.*);\n/.exec(script)![1]!;
  return JSON.parse(line) as Record<string, unknown>;
}

describe('htmlSnippet', () => {
  it('is one <form> posting to the submission URL with a typed, labelled control per field', () => {
    const { html } = split(htmlSnippet(plainForm));
    const { tags, text } = tokenize(html);
    const [form, ...others] = opening(tags, 'form');
    expect(others).toEqual([]);
    expect(form!.attrs).toMatchObject({
      id: formElementId(plainForm.uuid),
      method: 'post',
      action: plainForm.submissionUrl,
    });
    // Balanced elements (void ones aside).
    for (const name of ['form', 'p', 'label', 'select', 'option', 'textarea', 'div', 'button', 'span']) {
      expect(opening(tags, name).length, name).toBe(tags.filter((t) => t.name === name && t.closing).length);
    }
    expect(controlNamed(tags, 'name')!.attrs).toMatchObject({
      type: 'text',
      required: '',
      placeholder: 'Jane',
    });
    expect(controlNamed(tags, 'email')!.attrs).toMatchObject({ type: 'email', required: '' });
    expect(controlNamed(tags, 'phone')!.attrs).toMatchObject({ type: 'tel' });
    expect(controlNamed(tags, 'phone')!.attrs).not.toHaveProperty('required');
    expect(controlNamed(tags, 'age')!.attrs).toMatchObject({ type: 'number', step: 'any' });
    expect(controlNamed(tags, 'site')!.attrs).toMatchObject({ type: 'url' });
    expect(controlNamed(tags, 'topic')).toMatchObject({ name: 'select', attrs: { required: '' } });
    expect(opening(tags, 'option').map((t) => t.attrs.value)).toEqual(['', 'Sales', 'Support']);
    expect(controlNamed(tags, 'message')).toMatchObject({
      name: 'textarea',
      attrs: { placeholder: 'Say hi' },
    });
    for (const label of plainForm.fields.map((f) => f.label)) expect(text).toContain(label);
    // Each control sits inside its label: as many labels as fields, plus the honeypot's.
    expect(opening(tags, 'label')).toHaveLength(plainForm.fields.length + 1);
    expect(opening(tags, 'button')[0]!.attrs.type).toBe('submit');
  });

  it('has a hidden honeypot and an empty _t_start that the script fills', () => {
    const { html, script } = split(htmlSnippet(plainForm));
    const { tags } = tokenize(html);
    const trap = controlNamed(tags, '_t_trap')!;
    expect(trap.attrs).toMatchObject({ type: 'text', value: '', tabindex: '-1', autocomplete: 'off' });
    const box = tags
      .slice(0, tags.indexOf(trap))
      .reverse()
      .find((t) => t.name === 'div' && !t.closing)!;
    expect(box.attrs['aria-hidden']).toBe('true');
    expect(box.attrs.style).toMatch(/position:absolute;left:-10000px/);
    expect(controlNamed(tags, '_t_start')!.attrs).toMatchObject({ type: 'hidden', value: '' });
    expect(script).toContain(`find('input[name="_t_start"]').value = String(Math.floor(Date.now() / 1000))`);
  });

  it('posts JSON with fetch, Accept: application/json, and shows the message or follows the redirect', () => {
    const { script } = split(htmlSnippet({ ...plainForm, redirectUrl: 'https://example.com/thanks' }));
    expect(() => new vm.Script(script)).not.toThrow();
    expect(script).toContain(`'Content-Type': 'application/json', Accept: 'application/json'`);
    expect(scriptConfig(script)).toMatchObject({
      url: plainForm.submissionUrl,
      successMessage: plainForm.successMessage,
      redirectUrl: 'https://example.com/thanks',
    });
  });

  it('uses the default success message, and never follows a non-http redirect', () => {
    const { script } = split(
      htmlSnippet({ ...plainForm, successMessage: null, redirectUrl: 'javascript:alert(1)' }),
    );
    expect(scriptConfig(script)).toMatchObject({
      successMessage: DEFAULT_SUCCESS_MESSAGE,
      redirectUrl: null,
    });
  });

  it('escapes hostile names, labels, options and texts for each context', () => {
    const snippet = htmlSnippet(hostileForm);
    const { html, script } = split(snippet); // still exactly one script element
    const { tags, text } = tokenize(html);
    expect(tags.map((t) => t.name)).not.toContain('img');
    expect(opening(tags, 'form')).toHaveLength(1);
    expect(controlNamed(tags, `n${HOSTILE}`)!.attrs.placeholder).toBe(`P${HOSTILE}`);
    expect(controlNamed(tags, "it's")).toBeDefined();
    expect(opening(tags, 'option').map((t) => t.attrs.value)).toEqual(['', `O${HOSTILE}`, 'b']);
    expect(text).toContain(`L${HOSTILE}`.trim());
    expect(text).toContain(`O${HOSTILE}`.trim());
    expect(opening(tags, 'form')[0]!.attrs['aria-label']).toBe(hostileForm.name);
    // The id keeps only safe characters; the script can neither be closed nor commented out.
    expect(opening(tags, 'form')[0]!.attrs.id).toMatch(/^hostplane-form-[a-zA-Z0-9-]+$/);
    expect(script).not.toMatch(/<\/|<!--|\u2028/);
    expect(() => new vm.Script(script)).not.toThrow();
    expect(scriptConfig(script).successMessage).toBe(hostileForm.successMessage);
  });

  it('scopes each form apart: two forms on a page get different ids, the script finds its own', () => {
    const other = { ...plainForm, uuid: '0e9d8c7b-1111-4222-8333-444455556666' };
    expect(formElementId(plainForm.uuid)).not.toBe(formElementId(other.uuid));
    const { script } = split(htmlSnippet(other));
    expect(script).toContain('document.currentScript');
    expect(scriptConfig(script).id).toBe(formElementId(other.uuid));
    expect(script).not.toMatch(/getElementsBy|querySelector\((?!selector)/); // no page-wide lookups
  });
});

// --- React -------------------------------------------------------------------------------------

// Inside the repository, so the compiled component's `import 'react'` finds node_modules.
mkdirSync(path.join(process.cwd(), '.cache'), { recursive: true });
const scratch = mkdtempSync(path.join(process.cwd(), '.cache', 'embed-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const REACT_DOM_SERVER: string = 'react-dom/server';

/** Compiles the snippet with esbuild (JSX), then imports it and renders it with react-dom/server. */
async function renderReact(form: EmbedForm): Promise<{ name: string; html: string }> {
  const entry = path.join(scratch, `${Math.random().toString(36).slice(2)}.jsx`);
  writeFileSync(entry, reactSnippet(form));
  const out = entry.replace(/\.jsx$/, '.mjs');
  await build({
    entryPoints: [entry],
    outfile: out,
    format: 'esm',
    platform: 'node',
    jsx: 'automatic',
    bundle: true,
    packages: 'external',
    logLevel: 'silent',
  });
  const [mod, React, server] = await Promise.all([
    import(pathToFileURL(out).href) as Promise<{ default: () => unknown }>,
    import('react'),
    // react-dom ships no types here (no @types/react-dom): the one function used, typed by hand.
    import(REACT_DOM_SERVER) as Promise<{ renderToStaticMarkup(element: unknown): string }>,
  ]);
  const element = React.createElement(mod.default as React.FC);
  return { name: mod.default.name, html: server.renderToStaticMarkup(element) };
}

describe('reactSnippet', () => {
  it('compiles as JSX and renders every field, the honeypot, with the named component', async () => {
    const snippet = reactSnippet(plainForm);
    expect(snippet).toMatch(/^import \{ useEffect, useState \} from 'react';/);
    expect(snippet).toContain('export default function ContactUsForm()');
    expect(snippet).toContain('setStartedAt(Math.floor(Date.now() / 1000))');
    expect(snippet).toContain("headers: { 'Content-Type': 'application/json', Accept: 'application/json' }");
    const { name, html } = await renderReact(plainForm);
    expect(name).toBe('ContactUsForm');
    const { tags, text } = tokenize(html.replace(/\/>/g, '>'));
    for (const f of plainForm.fields) expect(controlNamed(tags, f.name), f.name).toBeDefined();
    expect(controlNamed(tags, 'email')!.attrs).toMatchObject({ type: 'email', required: '' });
    expect(opening(tags, 'option').map((t) => t.attrs.value)).toEqual(['', 'Sales', 'Support']);
    expect(controlNamed(tags, '_t_trap')!.attrs).toMatchObject({ tabindex: '-1', autocomplete: 'off' });
    expect(text).toContain('Your name');
  });

  it('keeps hostile values as data: they render escaped, and the source still compiles', async () => {
    const { html } = await renderReact(hostileForm);
    const { tags, text } = tokenize(html.replace(/\/>/g, '>'));
    expect(tags.map((t) => t.name)).not.toContain('img');
    expect(tags.map((t) => t.name)).not.toContain('script');
    expect(controlNamed(tags, `n${HOSTILE}`)!.attrs.placeholder).toBe(`P${HOSTILE}`);
    expect(text).toContain(`L${HOSTILE}`.trim());
    expect(reactSnippet(hostileForm)).not.toMatch(/<\/script|\u2028/);
  });

  it.each([
    ['contact us!', 'ContactUsForm'],
    ['Contact Form', 'ContactForm'],
    ['2024 survey', 'Hostplane2024SurveyForm'],
    ['日本語', 'HostplaneForm'],
    ['', 'HostplaneForm'],
    ['</script>', 'ScriptForm'],
  ])('names the component of %j %s', (name, expected) => {
    expect(componentName(name)).toBe(expected);
  });
});

// --- curl --------------------------------------------------------------------------------------

/** Runs the snippet in `shell` with a `curl` function that prints its arguments, one per line. */
function curlArgs(snippet: string, shell: 'bash' | 'sh'): string[] {
  const script = `curl() { for a in "$@"; do printf '%s\\0' "$a"; done; }\n${snippet}\n`;
  return execFileSync(shell, ['-c', script], { encoding: 'utf8' }).split('\0').slice(0, -1);
}

describe('curlSnippet', () => {
  it('parses as shell (bash -n)', () => {
    for (const form of [plainForm, hostileForm]) {
      expect(() => execFileSync('bash', ['-n', '-c', curlSnippet(form)])).not.toThrow();
    }
  });

  it.each(['bash', 'sh'] as const)('posts a valid JSON submission (%s)', (shell) => {
    const args = curlArgs(curlSnippet(plainForm), shell);
    expect(args.slice(0, 4)).toEqual(['-sS', '-X', 'POST', plainForm.submissionUrl]);
    expect(args).toContain('Content-Type: application/json');
    const body = JSON.parse(args[args.indexOf('--data-binary') + 1]!) as Record<string, unknown>;
    const now = Math.floor(Date.now() / 1000);
    expect(body).toMatchObject({
      name: 'Jane Doe',
      email: 'jane@example.com',
      phone: '+15550100',
      age: '42',
      site: 'https://example.com',
      topic: 'Sales',
      _t_trap: '',
    });
    expect(typeof body.message).toBe('string');
    expect(body._t_start).toBeGreaterThanOrEqual(now - 12);
    expect(body._t_start).toBeLessThanOrEqual(now - 9);
  });

  it('single-quote-escapes hostile names and values', () => {
    const args = curlArgs(curlSnippet(hostileForm), 'sh');
    const body = JSON.parse(args[args.indexOf('--data-binary') + 1]!) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual([`n${HOSTILE}`, "it's", 'action', '__proto__', '_t_trap', '_t_start']);
    expect(body["it's"]).toBe(`O${HOSTILE}`);
  });
});
