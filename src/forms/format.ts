import { addressMessage, type AddressState } from './addresses.js';
import type { FormRow, StoredField, SubmissionRow } from './tables.js';

// Rows to the API's JSON shapes (spec 2.4-2.6).

export function submissionUrl(baseUrl: string, uuid: string): string {
  return `${baseUrl}/f/${uuid}`;
}

export function fieldJson(field: StoredField, position: number) {
  return { ...field, position };
}

export function fieldsJson(fields: readonly StoredField[]) {
  return fields.map(fieldJson);
}

export function formSummaryJson(row: FormRow) {
  return {
    id: row.id,
    uuid: row.uuid,
    name: row.name,
    slug: row.slug,
    is_active: row.isActive,
    submission_count: row.submissionCount,
    created_at: row.createdAt.toISOString(),
  };
}

/** The state of the address submissions are mailed to (extension fields beside `notification_email`). */
export function addressJson(state: AddressState) {
  return {
    notification_email_status: state.status,
    notification_email_message: addressMessage(state),
  };
}

export function formJson(row: FormRow, baseUrl: string, address: AddressState) {
  return {
    ...formSummaryJson(row),
    description: row.description,
    fields: fieldsJson(row.fields),
    success_message: row.successMessage,
    redirect_url: row.redirectUrl,
    notification_email: row.notificationEmail,
    ...addressJson(address),
    submission_url: submissionUrl(baseUrl, row.uuid),
    site_id: row.siteId,
    updated_at: row.updatedAt.toISOString(),
  };
}

export function formRefJson(row: Pick<FormRow, 'id' | 'uuid' | 'name'>) {
  return { id: row.id, uuid: row.uuid, name: row.name };
}

export function submissionJson(row: SubmissionRow) {
  return {
    id: row.id,
    uuid: row.uuid,
    data: row.data,
    is_spam: row.isSpam,
    spam_score: row.spamScore,
    is_archived: row.isArchived,
    is_read: row.isRead,
    submitted_at: row.submittedAt.toISOString(),
    read_at: row.readAt?.toISOString() ?? null,
  };
}

export function submissionDetailJson(row: SubmissionRow) {
  return {
    ...submissionJson(row),
    metadata: {
      ip_address: row.ipHash,
      user_agent: row.userAgent,
      referer: row.referer,
      origin: row.origin,
    },
    spam_reasons: row.spamReasons,
  };
}
