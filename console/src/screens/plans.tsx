import { call } from '../api.js';
import { useAccount } from '../session.js';
import { Alert, formatBytes, Page, useLoad } from '../ui/kit.js';
import './account.css';

interface PlanLimits {
  files_per_site: number | null;
  storage_bytes_per_site: number | null;
  sites: number;
  forms: number;
  submissions_per_month: number;
  sqlite_databases: number | null;
  sqlite_database_bytes: number | null;
  sqlite_users_per_database: number | null;
  deploys_kept: number;
  drafts_kept: number;
}
interface PlansAnswer {
  current: string;
  /** The operator's contact for a bigger plan (HOSTPLANE_PLANS_CONTACT): a URL or mailto:, or null. */
  contact: string | null;
  plans: Array<{ type: string; name: string; limits: PlanLimits }>;
}

const count = (n: number | null) => (n === null ? 'Unlimited' : n.toLocaleString('en'));
const bytes = (n: number | null) => (n === null ? 'Unlimited' : formatBytes(n));

/** One row per limit, one column per plan. */
const ROWS: Array<[string, (l: PlanLimits) => string]> = [
  ['Sites', (l) => count(l.sites)],
  ['Files per site', (l) => count(l.files_per_site)],
  ['Storage per site', (l) => bytes(l.storage_bytes_per_site)],
  ['Forms', (l) => count(l.forms)],
  ['Form submissions per month', (l) => count(l.submissions_per_month)],
  ['SQLite databases', (l) => count(l.sqlite_databases)],
  ['Size of one SQLite database', (l) => bytes(l.sqlite_database_bytes)],
  ['End users per SQLite database', (l) => count(l.sqlite_users_per_database)],
  ['Deploys kept per site (for rollback)', (l) => count(l.deploys_kept)],
  ['Draft deploys kept per site', (l) => count(l.drafts_kept)],
];

/** What `upgrade_url` points at: the plans; a plan is changed by the operator. */
export function Plans() {
  const { me } = useAccount();
  const plans = useLoad(() => call<PlansAnswer>('GET', '/api/v1/account/plans'), []);
  const list = plans.data?.plans ?? [];
  return (
    <Page title="Plans">
      <p>
        You are on the <strong>{me.plan.name}</strong> plan. A plan is changed by the operator of this
        Hostplane, not from this page.
      </p>
      {plans.data && <Contact contact={plans.data.contact} />}
      <Alert error={plans.error} />
      {list.length > 0 && (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="The limits of each plan">
          <table class="plans">
            <caption>The limits of each plan (your plan is marked)</caption>
            <thead>
              <tr>
                <th scope="col">Limit</th>
                {list.map((plan) => (
                  <th
                    scope="col"
                    key={plan.type}
                    class={plan.type === plans.data?.current ? 'current-plan' : undefined}
                    aria-current={plan.type === plans.data?.current ? 'true' : undefined}
                  >
                    {plan.name}
                    {plan.type === plans.data?.current && <span class="badge">Your plan</span>}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {ROWS.map(([label, value]) => (
                <tr key={label}>
                  <th scope="row">{label}</th>
                  {list.map((plan) => (
                    <td
                      key={plan.type}
                      class={plan.type === plans.data?.current ? 'current-plan' : undefined}
                    >
                      {value(plan.limits)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p class="hint">The number of sites is the same on every plan of this server.</p>
    </Page>
  );
}

/** The way to a bigger plan: the operator's link or address when they gave one. */
function Contact({ contact }: { contact: string | null }) {
  if (!contact)
    return (
      <p class="hint">
        This server’s operator has not published a contact for plans: ask whoever gave you your account.
      </p>
    );
  const mail = contact.toLowerCase().startsWith('mailto:');
  const shown = mail ? decodeURIComponent(contact.slice(7).split('?')[0] ?? '') : contact;
  return (
    <p class="card plans-contact">
      Need more room? {mail ? 'Write to ' : 'Ask for another plan at '}
      <a href={contact} {...(mail ? {} : { target: '_blank', rel: 'noopener' })}>
        {shown}
      </a>
      .
    </p>
  );
}
