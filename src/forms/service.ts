import { and, asc, count, eq, like, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Platform } from '../platform/index.js';
import type { Db, Tx } from '../store/index.js';
import {
  assertValidFields,
  insertField,
  reorderFields,
  slugify,
  toStoredField,
  uniqueSlug,
  type FieldInput,
} from './definitions.js';
import type { NotificationAddresses } from './addresses.js';
import { formSubmissions, forms, type FormRow, type StoredField } from './tables.js';

/** Which forms a caller may see: a key sees its site's, a session its account's. */
export type FormScope = { siteId: number } | { accountId: number };

export interface NewForm {
  name: string;
  fields: FieldInput[];
  description?: string | null;
  success_message?: string | null;
  redirect_url?: string | null;
  notification_email?: string | null;
  is_active?: boolean;
}

export type FormChanges = Partial<Omit<NewForm, 'fields'>> & { fields?: FieldInput[] };

export interface FieldChanges {
  label?: string;
  required?: boolean;
  placeholder?: string | null;
  options?: string[] | null;
}

/** Serializes form creation per account, so two concurrent creates cannot overshoot the plan. */
const FORMS_LOCK_CLASS = 4201;

/** Forms and their fields (definitions); submissions live in submissions.ts. */
export class FormsService {
  constructor(
    private readonly db: Db,
    private readonly platform: Platform,
    private readonly hooks: FormsHooks = { upgradeUrl: '' },
  ) {}

  async list(scope: FormScope): Promise<FormRow[]> {
    return dbOp('forms_list', () =>
      this.db.select().from(forms).where(scopeWhere(scope)).orderBy(asc(forms.id)),
    );
  }

  async get(scope: FormScope, id: number): Promise<FormRow> {
    const [row] = await dbOp('forms_get', () =>
      this.db
        .select()
        .from(forms)
        .where(and(eq(forms.id, id), scopeWhere(scope))),
    );
    if (!row) throw formNotFound(id);
    return row;
  }

  /** The form behind a public submission URL. */
  async byUuid(uuid: string): Promise<FormRow | undefined> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(uuid)) return undefined;
    const [row] = await dbOp('forms_by_uuid', () =>
      this.db.select().from(forms).where(eq(forms.uuid, uuid.toLowerCase())),
    );
    return row;
  }

  async create(siteId: number, input: NewForm, resourceUid?: string): Promise<FormRow> {
    const fields = input.fields.map((f) => toStoredField(f));
    assertValidFields(fields);
    const usage = await this.platform.getUsage(siteId);
    if (!usage) throw new AppError('UNKNOWN_SITE', { siteId });
    const { site, plan } = usage;
    const address = input.notification_email ?? null;
    if (address !== null) await this.hooks.addresses?.admit(site.accountId, address);
    const created = await this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${FORMS_LOCK_CLASS}, ${site.accountId})`);
      const [counted] = await tx
        .select({ n: count() })
        .from(forms)
        .where(eq(forms.accountId, site.accountId));
      const n = counted?.n ?? 0;
      if (n >= plan.maxForms) {
        throw new AppError('FORM_LIMIT', {
          current: n,
          limit: plan.maxForms,
          plan: plan.type,
          upgradeUrl: this.hooks.upgradeUrl,
        });
      }
      const base = slugify(input.name);
      const taken = await tx
        .select({ slug: forms.slug })
        .from(forms)
        .where(and(eq(forms.siteId, siteId), like(forms.slug, `${base}%`)));
      const [row] = await tx
        .insert(forms)
        .values({
          siteId,
          accountId: site.accountId,
          name: input.name,
          slug: uniqueSlug(base, new Set(taken.map((t) => t.slug))),
          description: input.description ?? null,
          isActive: input.is_active ?? true,
          successMessage: input.success_message ?? null,
          redirectUrl: input.redirect_url ?? null,
          notificationEmail: input.notification_email ?? null,
          fields,
          resourceUid: resourceUid ?? null,
        })
        .returning();
      return row!;
    });
    // A new address gets its confirmation link (its own transaction: the token and its mail).
    if (address !== null) await this.hooks.addresses?.request(created, 'set');
    return created;
  }

  /**
   * Changes a form. `fields` replaces the list; a new field with the name of an existing one
   * keeps that field's id, so ids stay stable across a PUT that resends the same fields.
   */
  async update(scope: FormScope, id: number, changes: FormChanges): Promise<FormRow> {
    const address = changes.notification_email;
    const addresses = this.hooks.addresses;
    // A new address: refused before anything is written when the account has too many waiting.
    if (addresses && typeof address === 'string') {
      const current = await this.get(scope, id);
      await addresses.admit(current.accountId, address);
    }
    const updated = await this.change(scope, id, (row) => {
      const next: Partial<FormRow> = {};
      if (changes.name !== undefined) next.name = changes.name;
      if (changes.description !== undefined) next.description = changes.description;
      if (changes.success_message !== undefined) next.successMessage = changes.success_message;
      if (changes.redirect_url !== undefined) next.redirectUrl = changes.redirect_url;
      if (changes.notification_email !== undefined) next.notificationEmail = changes.notification_email;
      if (changes.is_active !== undefined) next.isActive = changes.is_active;
      if (changes.fields !== undefined) {
        const idByName = new Map(row.fields.map((f) => [f.name.toLowerCase(), f.id]));
        const fields = changes.fields.map((f) => toStoredField(f, idByName.get(f.name.toLowerCase())));
        assertValidFields(fields);
        next.fields = fields;
      }
      return next;
    });
    if (addresses && typeof address === 'string') await addresses.request(updated, 'set');
    return updated;
  }

  async toggle(scope: FormScope, id: number): Promise<FormRow> {
    return this.change(scope, id, (row) => ({ isActive: !row.isActive }));
  }

  async addField(
    scope: FormScope,
    id: number,
    input: FieldInput & { position?: number },
  ): Promise<{ form: FormRow; field: StoredField }> {
    const field = toStoredField(input);
    const form = await this.change(scope, id, (row) => {
      const fields = insertField(row.fields, field, input.position);
      assertValidFields(fields);
      return { fields };
    });
    return { form, field };
  }

  async updateField(
    scope: FormScope,
    id: number,
    fieldId: string,
    changes: FieldChanges,
  ): Promise<{ form: FormRow; field: StoredField }> {
    let updated: StoredField | undefined;
    const form = await this.change(scope, id, (row) => {
      const fields = row.fields.map((f) => {
        if (f.id !== fieldId) return f;
        updated = {
          ...f,
          label: changes.label ?? f.label,
          required: changes.required ?? f.required,
          placeholder: changes.placeholder !== undefined ? changes.placeholder : f.placeholder,
          options: f.type === 'select' && changes.options !== undefined ? changes.options : f.options,
        };
        return updated;
      });
      if (!updated) throw fieldNotFound(fieldId);
      assertValidFields(fields);
      return { fields };
    });
    return { form, field: updated! };
  }

  async deleteField(scope: FormScope, id: number, fieldId: string): Promise<FormRow> {
    return this.change(scope, id, (row) => {
      if (!row.fields.some((f) => f.id === fieldId)) throw fieldNotFound(fieldId);
      const fields = row.fields.filter((f) => f.id !== fieldId);
      if (fields.length === 0)
        throw new AppError('CONFLICT', {
          message:
            'A form keeps at least one field: add another before deleting this one, or delete the form',
        });
      return { fields };
    });
  }

  async reorder(scope: FormScope, id: number, fieldIds: string[]): Promise<FormRow> {
    return this.change(scope, id, (row) => ({ fields: reorderFields(row.fields, fieldIds) }));
  }

  /** Deletes the form; its submissions go with it (cascade) and its pending mail is purged. */
  async delete(scope: FormScope, id: number): Promise<FormRow> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx
        .delete(forms)
        .where(and(eq(forms.id, id), scopeWhere(scope)))
        .returning();
      if (!row) throw formNotFound(id);
      await this.hooks.purge?.(tx, row);
      return row;
    });
  }

  /** Forms of the account and the plan's cap, for the usage report. */
  async countForAccount(accountId: number): Promise<number> {
    const [counted] = await this.db.select({ n: count() }).from(forms).where(eq(forms.accountId, accountId));
    return counted?.n ?? 0;
  }

  // ---- Cluster mode: what the Form controller needs. No scope: it acts for the platform, and
  // finds a form by the resource that controls it.

  /** The form a Form resource (by its uid) controls. */
  async byResourceUid(uid: string): Promise<FormRow | undefined> {
    const [row] = await dbOp('forms_by_resource', () =>
      this.db.select().from(forms).where(eq(forms.resourceUid, uid)),
    );
    return row;
  }

  async byId(id: number): Promise<FormRow | undefined> {
    const [row] = await dbOp('forms_by_id', () => this.db.select().from(forms).where(eq(forms.id, id)));
    return row;
  }

  /** Every form's identity and resource link (not its fields), for the controller's resync. */
  async listLinks(): Promise<FormLink[]> {
    return dbOp('forms_list_links', () =>
      this.db
        .select({
          id: forms.id,
          siteId: forms.siteId,
          slug: forms.slug,
          name: forms.name,
          isActive: forms.isActive,
          notificationEmail: forms.notificationEmail,
          resourceUid: forms.resourceUid,
        })
        .from(forms)
        .orderBy(asc(forms.id)),
    );
  }

  /**
   * Links form `id` to the resource `uid`, unless another resource that is still alive holds it
   * (`isLive`: the caller's view of the cluster). Under the row lock, so two resources naming one
   * form cannot both win.
   */
  async claimForResource(
    id: number,
    uid: string,
    isLive: (holder: string) => boolean,
  ): Promise<'claimed' | 'held' | 'missing'> {
    return dbOp('forms_claim', () =>
      this.db.transaction(async (tx) => {
        const [row] = await tx.select().from(forms).where(eq(forms.id, id)).for('update');
        if (!row) return 'missing';
        if (row.resourceUid === uid) return 'claimed';
        if (row.resourceUid !== null && isLive(row.resourceUid)) return 'held';
        await tx.update(forms).set({ resourceUid: uid }).where(eq(forms.id, id));
        return 'claimed';
      }),
    );
  }

  /**
   * Writes a Form resource's spec fields into its form, only while the form still holds
   * `expected` (what the caller read): one conditional statement, so a change committed
   * meanwhile is never overwritten by an older spec. Undefined when the form changed or is gone.
   */
  async updateFromResource(
    id: number,
    expected: ResourceFields,
    next: ResourceFields,
  ): Promise<FormRow | undefined> {
    const [row] = await dbOp('forms_update_from_resource', () =>
      this.db
        .update(forms)
        .set({ ...next, updatedAt: sql`now()` })
        .where(
          and(
            eq(forms.id, id),
            eq(forms.name, expected.name),
            eq(forms.isActive, expected.isActive),
            sql`${forms.notificationEmail} is not distinct from ${expected.notificationEmail}`,
          ),
        )
        .returning(),
    );
    return row;
  }

  /** Stored submissions of a form: all of them, and those in the spam bin. */
  async submissionCounts(id: number): Promise<{ total: number; spam: number }> {
    const [counted] = await dbOp('forms_submission_counts', () =>
      this.db
        .select({
          total: count(),
          spam: sql<number>`count(*) filter (where ${formSubmissions.isSpam})`.mapWith(Number),
        })
        .from(formSubmissions)
        .where(eq(formSubmissions.formId, id)),
    );
    return { total: counted?.total ?? 0, spam: counted?.spam ?? 0 };
  }

  /** Read-modify-write of one form under its row lock. */
  private async change(
    scope: FormScope,
    id: number,
    edit: (row: FormRow) => Partial<FormRow>,
  ): Promise<FormRow> {
    return dbOp('forms_change', () =>
      this.db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(forms)
          .where(and(eq(forms.id, id), scopeWhere(scope)))
          .for('update');
        if (!row) throw formNotFound(id);
        const [updated] = await tx
          .update(forms)
          .set({ ...edit(row), updatedAt: sql`now()` })
          .where(eq(forms.id, id))
          .returning();
        return updated!;
      }),
    );
  }
}

/** What a FormsService calls beyond its tables. */
export interface FormsHooks {
  upgradeUrl: string;
  purge?: PurgeHook;
  /** Confirms new notification addresses (the api role; the controller writes without). */
  addresses?: NotificationAddresses;
}

/** The fields a Form resource's spec carries, as the form holds them. */
export type ResourceFields = Pick<FormRow, 'name' | 'isActive' | 'notificationEmail'>;

/** A form's identity and resource link, as the resync reads them. */
export type FormLink = Pick<
  FormRow,
  'id' | 'siteId' | 'slug' | 'name' | 'isActive' | 'notificationEmail' | 'resourceUid'
>;

/** Runs inside the delete's transaction (e.g. the mail outbox's rows of the form). */
export type PurgeHook = (tx: Tx, form: FormRow) => Promise<void>;

function scopeWhere(scope: FormScope) {
  return 'siteId' in scope ? eq(forms.siteId, scope.siteId) : eq(forms.accountId, scope.accountId);
}

export function formNotFound(id: number | string): AppError {
  return new AppError('NOT_FOUND', { message: `Form ${id} not found.` });
}

function fieldNotFound(fieldId: string): AppError {
  return new AppError('NOT_FOUND', { message: `Field "${fieldId}" not found in this form.` });
}
