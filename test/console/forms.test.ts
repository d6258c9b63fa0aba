import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, invitedOwner, PASSWORD } from '../support/account-api.js';
import {
  capture,
  expectAccessible,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';
import { mailedLink } from '../support/console-mail.js';
import { contactFields, formsApi, type FormsApi, type Json } from '../support/forms-api.js';

/** The forms screens in Chromium: the editor builds a form the API then holds, field for field. */
describe('console: forms, fields, notification and embed snippets (Chromium)', () => {
  let rig: ConsoleRig;
  let api: FormsApi;
  let bearer: Record<string, string>;
  let who: { email: string; password: string };
  let siteId: number;

  beforeAll(async () => {
    // The worker sends the confirmation mails to Mailpit.
    rig = await startConsole({ worker: true });
    const invited = await invitedOwner(rig.hp, 'forms-editor@example.com');
    bearer = invited.bearer;
    who = { email: invited.email, password: PASSWORD };
    const site = await rig.hp.createSite('forms-editing', { email: who.email });
    siteId = site.siteId;
    api = formsApi(rig.hp, site);
  }, 120_000);
  afterAll(async () => rig?.close());

  const fieldNames = (form: Json) => (form.fields as Json[]).map((f) => f.name as string);

  it('creates a form with fields, adds, edits and reorders one by keyboard, sets the notification address and shows the API’s snippets', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/forms`));
    await waitForText(page, 'No forms yet');
    await waitForText(page, 'Forms usage on the free plan');

    await page.locator('#field-form-name').fill('Contact us');
    await page.locator('#field-form-success').fill('Thanks, we will write back.');
    // The first field starts as a required email; add a name and a select.
    await page.locator('::-p-text(Add another field)').click();
    await page.locator('#field-new-1-label').fill('Your name');
    await page.locator('#field-new-1-name').fill('name');
    await page.locator('::-p-text(Add another field)').click();
    await page.locator('#field-new-2-label').fill('Topic');
    await page.locator('#field-new-2-name').fill('topic');
    await page.select('#new-2-type', 'select');
    await page.locator('#new-2-options').fill('Sales\nSupport');
    await page.locator('::-p-text(Create form)').click();
    await page.waitForFunction(() => /\/forms\/\d+$/.test(location.pathname));
    const formId = Number(page.url().split('/').pop());
    await waitForText(page, 'Active: the form accepts submissions.');

    let form = (await api.call('GET', `/api/v1/forms/${formId}`)).body.form as Json;
    expect(form.name).toBe('Contact us');
    expect(form.success_message).toBe('Thanks, we will write back.');
    expect(fieldNames(form)).toEqual(['email', 'name', 'topic']);
    expect((form.fields as Json[])[2]).toMatchObject({ type: 'select', options: ['Sales', 'Support'] });

    // The editor starts from the form's settings; a blank success message is saved as none.
    expect(await page.$eval('#field-edit-success', (el) => (el as HTMLInputElement).value)).toBe(
      'Thanks, we will write back.',
    );
    await page.locator('#field-edit-description').fill('Questions about the product');
    await page.$eval('#field-edit-success', (el) => ((el as HTMLInputElement).value = ''));
    await page.$eval('#field-edit-success', (el) => el.dispatchEvent(new Event('input', { bubbles: true })));
    await page.locator('::-p-text(Save settings)').click();
    await waitForText(page, 'Settings saved.');
    form = (await api.call('GET', `/api/v1/forms/${formId}`)).body.form as Json;
    expect(form).toMatchObject({ description: 'Questions about the product', success_message: null });

    // Add a long-text field at the end.
    await page.locator('#field-add-label').fill('Message');
    await page.locator('#field-add-name').fill('message');
    await page.select('#add-type', 'textarea');
    await page.locator('::-p-text(Add field)').click();
    await waitForText(page, 'Field added.');

    // Edit it: a new label, required.
    await page.locator('button[aria-label="Edit: Message"]').click();
    await page.waitForSelector('.field-edit');
    const labelInput = await page.$eval('.field-edit input[name$="-label"]', (el) => el.id);
    await page.locator(`#${labelInput}`).fill('Your message');
    await page.locator('.field-edit input[type=checkbox]').click();
    await page.locator('::-p-text(Save field)').click();
    await waitForText(page, 'Field updated.');

    // Move "Your name" to the top by keyboard: focus the button, press Enter; focus stays on the field.
    await page.focus('button[aria-label="Move up: Your name"]');
    await page.keyboard.press('Enter');
    await waitForText(page, 'Fields reordered.');
    // Focus stays with the moved field (its Move up is disabled at the top: Move down then).
    await page.waitForFunction(() =>
      /^Move (up|down): Your name$/.test(document.activeElement?.getAttribute('aria-label') ?? ''),
    );

    form = (await api.call('GET', `/api/v1/forms/${formId}`)).body.form as Json;
    expect(fieldNames(form)).toEqual(['name', 'email', 'topic', 'message']);
    expect((form.fields as Json[])[3]).toMatchObject({
      label: 'Your message',
      required: true,
      type: 'textarea',
    });

    // The notification address: the account's until one is set.
    await waitForText(page, `mailed to ${who.email}`);
    await page.locator('#field-notify-email').fill('alerts@example.com');
    await page.locator('::-p-text(Set address)').click();
    await waitForText(page, 'alerts@example.com is set: it gets submissions once its owner confirms.');
    const notification = await call(
      rig.hp,
      'GET',
      `/api/v1/account/sites/${siteId}/forms/${formId}/notification`,
      { headers: bearer },
    );
    expect(notification.body).toMatchObject({
      notification_email: 'alerts@example.com',
      effective_email: 'alerts@example.com',
      notification_email_status: 'pending',
    });
    await expectAccessible(page);
    await capture(page, 'form-editor');

    // Cleared: back to the account's address.
    await page.locator('::-p-text(Use my account email)').click();
    await waitForText(page, 'Submissions go to your account email again.');
    const cleared = await call(
      rig.hp,
      'GET',
      `/api/v1/account/sites/${siteId}/forms/${formId}/notification`,
      {
        headers: bearer,
      },
    );
    expect(cleared.body).toMatchObject({ notification_email: null, effective_email: who.email });

    // The embed snippets are the API's, character for character, with the public submission URL.
    await page.locator('nav[aria-label="Form sections"] ::-p-text(Embed)').click();
    await page.waitForFunction(() => document.querySelectorAll('.snippet textarea').length === 3);
    const shown = await page.$$eval('.snippet', (sections) =>
      sections.map((s) => [s.getAttribute('data-kind'), s.querySelector('textarea')!.value]),
    );
    for (const [kind, text] of shown) {
      const snippet = (await api.call('GET', `/api/v1/forms/${formId}/embed/${kind}`)).body.snippet as string;
      expect(text, kind!).toBe(snippet);
    }
    expect(shown.map(([kind]) => kind)).toEqual(['html', 'react', 'curl']);
    const url = await page.$eval('textarea', (el) => (el as HTMLTextAreaElement).value);
    expect(url).toBe(form.submission_url);
    expect(url).toMatch(/\/f\/[0-9a-f-]{36}$/);
    await page
      .browserContext()
      .overridePermissions(rig.origin, ['clipboard-read', 'clipboard-sanitized-write']);
    await page.locator('.snippet[data-kind=curl] button').click();
    await page.waitForFunction(
      () => document.querySelector('.snippet[data-kind=curl] button')?.textContent === 'Copied',
    );
    const curl = shown.find(([kind]) => kind === 'curl')![1];
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(curl);
    // Without a clipboard API (plain HTTP away from localhost) it never claims "Copied": it selects
    // the text and says how to copy it.
    await page.evaluate(() => Object.defineProperty(navigator, 'clipboard', { value: undefined }));
    await page.locator('.snippet[data-kind=html] button').click();
    await page.waitForFunction(() =>
      document.querySelector('.snippet[data-kind=html] [role=status]')?.textContent?.includes('press Ctrl+C'),
    );
    expect(await page.$eval('.snippet[data-kind=html] button', (b) => b.textContent)).toBe('Copy');
    const selected = await page.evaluate(() => {
      const area = document.activeElement as HTMLTextAreaElement;
      return area.value.slice(area.selectionStart, area.selectionEnd);
    });
    expect(selected).toBe(shown.find(([kind]) => kind === 'html')![1]);
    await expectAccessible(page);
    await capture(page, 'form-embed');

    // Back to the list: the form with its state and counts.
    await page.locator('::-p-text(All forms of the site)').click();
    await page.waitForFunction(() => document.querySelector('table')?.textContent?.includes('Contact us'));
    await page.waitForFunction(() => !document.querySelector('table')?.textContent?.includes('…'));
    const row = await page.$eval('tbody tr', (tr) => tr.textContent);
    expect(row).toContain('Active');
    await expectAccessible(page);
    await capture(page, 'forms');

    // Deactivate from the editor: the API says inactive.
    await page.locator('tbody a').click();
    await page.locator('::-p-text(Deactivate form)').click();
    await waitForText(page, 'Inactive: new submissions are refused');
    expect((await api.call('GET', `/api/v1/forms/${formId}`)).body.form.is_active).toBe(false);
  });

  it('says in words why a form cannot be created, and deletes a form after confirming', async () => {
    const page: Page = await rig.page();
    await signIn(rig, page, who);
    const made = await api.createOk({
      name: 'Short lived',
      fields: [{ name: 'a', label: 'A', type: 'text' }],
    });
    await page.goto(rig.url(`/sites/${siteId}/forms`));
    await waitForText(page, 'Short lived');
    // The free plan allows two forms: this account has them, so the third is refused in words.
    await page.locator('#field-form-name').fill('One too many');
    await page.locator('#field-new-0-label').fill('Email');
    await page.locator('::-p-text(Create form)').click();
    await page.waitForSelector('[role=alert]');
    expect(await page.$eval('[role=alert]', (el) => el.textContent)).toMatch(/form/i);

    await page.goto(rig.url(`/sites/${siteId}/forms/${made.id}`));
    await page.locator('::-p-text(Delete form)').click();
    await page.waitForFunction(() => /\/forms$/.test(location.pathname));
    expect((await api.call('GET', `/api/v1/forms/${made.id}`)).status).toBe(404);
  });

  it('shows a new notification address waiting, resends its link, and its owner confirms it on the mailed page', async () => {
    const owner = await invitedOwner(rig.hp, 'forms-confirm@example.com');
    const site = await rig.hp.createSite('forms-confirm', { email: owner.email });
    const form = await formsApi(rig.hp, site).createOk({ name: 'Help desk', fields: contactFields });
    const helpdesk = 'helpdesk-console@example.net';
    const page = await rig.page();
    await signIn(rig, page, { email: owner.email, password: PASSWORD });
    await page.goto(rig.url(`/sites/${site.siteId}/forms/${form.id as number}`));
    await waitForText(page, `mailed to ${owner.email}`);
    await page.locator('#field-notify-email').fill(helpdesk);
    await page.locator('::-p-text(Set address)').click();
    await waitForText(page, `Waiting for confirmation: we mailed ${helpdesk} a link`);
    await expectAccessible(page);
    await capture(page, 'form-notification-pending');
    const first = await mailedLink(rig, helpdesk, 'Confirm this address for form submissions', 1);
    await page.locator('::-p-text(Resend the confirmation link)').click();
    const link = await mailedLink(rig, helpdesk, 'Confirm this address for form submissions', 2);
    expect(link).not.toBe(first);

    // The address's owner: no account, no session; nothing happens before the button.
    const visitor = await rig.page();
    await visitor.goto(link);
    await waitForText(visitor, 'Confirm only if you want to receive them');
    expect(visitor.url()).not.toContain('#token=');
    await expectAccessible(visitor);
    await capture(visitor, 'confirm-notification');
    await visitor.locator('button::-p-text(Confirm this address)').click();
    await waitForText(visitor, `${helpdesk} is confirmed`);
    // The same link again: refused in words; the replaced one too (about:blank first: a new
    // document, not a change of fragment).
    await visitor.goto('about:blank');
    await visitor.goto(link);
    await visitor.locator('button::-p-text(Confirm this address)').click();
    await waitForText(visitor, 'already used');
    await visitor.goto('about:blank');
    await visitor.goto(first);
    await visitor.locator('button::-p-text(Confirm this address)').click();
    await waitForText(visitor, 'newer one');

    await page.reload();
    await waitForText(page, `mailed to ${helpdesk}`);
    const answer = await call(
      rig.hp,
      'GET',
      `/api/v1/account/sites/${site.siteId}/forms/${form.id as number}/notification`,
      { headers: owner.bearer },
    );
    expect(answer.body.notification_email_status).toBe('confirmed');
  });
});
