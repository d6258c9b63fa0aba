// The forms domain's public face: forms and their fields, public submissions with spam scoring,
// the submission quota, embed snippets.
export { forms, formSubmissions, formSubmissionUsage, type StoredField } from './tables.js';
