import { useAccount } from '../session.js';
import { Page } from '../ui/kit.js';

/** What `upgrade_url` points at: the plans; a plan is changed by the operator. */
export function Plans() {
  const { me } = useAccount();
  return (
    <Page title="Plans">
      <p>
        You are on the <strong>{me.plan.name}</strong> plan. A plan is changed by the operator of this
        Hostplane: ask them for more room.
      </p>
    </Page>
  );
}
